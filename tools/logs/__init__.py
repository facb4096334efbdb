"""Reading engine logs: tailing from the end, and diagnosing failures from a signature library."""
