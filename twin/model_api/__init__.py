"""A stand-in for the model providers: a loopback server speaking the Anthropic Messages API and OpenAI
Chat Completions, playing a script of model turns and faults. The real SDKs talk to it over HTTP; the
tests and the benchmarks both use it.
"""
