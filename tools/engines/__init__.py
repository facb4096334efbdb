"""Inference engines (SGLang, vLLM): typed launch configs, per-version flag builders, launch and readiness."""
