"""The digital twin: stand-ins for the outside world the agent acts upon (GPU hosts, SGLang and vLLM,
SpecForge, ``nvidia-smi``, the model providers), and the scenarios that describe them.

Nothing here is a tool or imports the agent or the tools. The simulated host (``tools.hosts.sim``) runs
these programs in place of the real ones; the tests and benchmarks use them directly. See
``docs/scenarios.md`` for the scenario format and what each stand-in imitates.
"""
