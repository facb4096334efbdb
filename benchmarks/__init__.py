"""Benchmarks of opsloop itself: run each as ``python -m benchmarks.NAME``; each prints one JSON line."""
