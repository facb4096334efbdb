"""The engine stand-in: a real process that parses SGLang/vLLM flags, starts up and serves HTTP."""
