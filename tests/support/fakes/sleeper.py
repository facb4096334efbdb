"""Fake long-running process: prints a line, optionally ignores SIGTERM, then sleeps."""

import signal
import sys
import time

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("sleeper started", flush=True)
while True:
    time.sleep(0.1)
