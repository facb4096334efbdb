"""The LLM policy: Anthropic and OpenAI-compatible models drive the loop through tool calls.

``build_llm_policy(config)`` is the entry point the wiring uses; see :mod:`agent.policies.llm.policy`.
"""

from __future__ import annotations

from agent.policies.llm.build import build_llm_policy, make_provider
from agent.policies.llm.policy import LlmPolicy
from agent.policies.llm.settings import ContextSettings, LlmSettings, RetrySettings

__all__ = [
    "ContextSettings", "LlmPolicy", "LlmSettings", "RetrySettings", "build_llm_policy", "make_provider",
]
