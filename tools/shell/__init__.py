"""The shell tool: guardrails (guard.py) over a small shell-syntax parser (parse.py)."""
