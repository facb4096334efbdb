"""The LLM policy: Anthropic and OpenAI-compatible models drive the loop through tool calls.

A map of the folder, following one ``decide()``:

- ``build.py`` makes the policy from :class:`~agent.policies.llm.settings.LlmSettings` (``settings.py``);
  ``policy.py`` is the policy itself.
- ``user_turn.py``, ``state_view.py`` and ``builtin_tools.py`` turn the loop's view into the next user
  turn; ``turns.py``, ``context.py`` and ``transcript.py`` keep the bounded conversation (pruning,
  folding old turns into findings) and its redacted record beside the state.
- ``wire_anthropic.py`` / ``wire_openai.py`` convert turns to and from each API (pure);
  ``anthropic_provider.py`` / ``openai_provider.py`` call the SDKs; ``retry.py`` retries transient
  failures; ``reply.py`` is what a provider returns; ``pricing.py`` turns usage into dollars;
  ``unavailable.py`` explains a model that cannot be reached.

Nothing is imported here, so reading the settings does not load the SDKs.
"""
