"""The LLM policy: Anthropic, OpenAI (Responses) and OpenAI-compatible models drive the loop through tool
calls (docs/llm.md).

A map of the folder, following one ``decide()``:

- ``build.py`` makes the policy from :class:`~agent.policies.llm.settings.LlmSettings` (``settings.py``);
  ``policy.py`` is the policy itself.
- ``user_turn.py`` and ``builtin_tools.py`` turn the loop's view into the next user turn;
  ``state_view.py`` renders the live state for the model and ``state_updates.py`` sends it whole once,
  then what changed; ``turns.py``, ``context.py``, ``budget.py`` and ``transcript.py`` keep the bounded,
  append-only conversation (pruning, folding old turns into digests, a budget fitted to the model's
  context window) and its redacted record beside the state; ``call_ids.py`` keeps ids valid everywhere.
- ``models.py`` knows model families (which wire, reasoning, thinking); ``wire_anthropic.py`` /
  ``wire_openai.py`` (Chat Completions) / ``wire_responses.py`` convert turns to and from each API
  (pure); ``anthropic_provider.py`` / ``openai_provider.py`` call the SDKs (``sdk_compat.py`` for older
  releases); ``retry.py`` retries transient failures; ``reply.py`` is what a provider returns;
  ``pricing.py`` turns usage into dollars; ``unavailable.py`` explains a model that cannot be used and
  ``text_tool_calls.py`` a server that returned tool calls as text.

Nothing is imported here, so reading the settings does not load the SDKs.
"""
