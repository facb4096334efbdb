"""The Anthropic Messages API through the official SDK (its own retries off; see ``retry.py``)."""

from __future__ import annotations

from typing import Any

import anthropic

from agent.policies.llm import wire_anthropic
from agent.policies.llm.models import ServerFacts, anthropic_profile
from agent.policies.llm.reply import ModelReply, ModelRequest
from agent.policies.llm.retry import API_FAILURES
from agent.policies.llm.sdk_compat import split_arguments
from agent.policies.llm.settings import ANTHROPIC_MAX_OUTPUT_TOKENS, LlmSettings


def thinking_parameter(settings: LlmSettings, model: str, max_tokens: int) -> dict[str, Any] | None:
    """The ``thinking`` object for the settings, or None to leave the model's default (``auto`` on a model
    that does not think adaptively). ``auto`` on an adaptive model asks for adaptive thinking with the
    configured display, so that its thinking comes back readable (newer models omit it by default)."""
    mode = settings.thinking
    profile = anthropic_profile(model)
    if mode == "auto":
        return {"type": "adaptive", "display": settings.thinking_display} if profile.adaptive_thinking else None
    if mode in ("adaptive", "on"):
        return {"type": "adaptive", "display": settings.thinking_display}
    if mode == "enabled":
        budget = min(settings.thinking_budget_tokens, max_tokens - 1)
        return {"type": "enabled", "budget_tokens": budget, "display": settings.thinking_display}
    if mode == "off":
        return {"type": "disabled"}
    return {"type": mode}


class AnthropicProvider:
    """One ``messages.create`` per :meth:`complete`, streamed (SSE) or not as the settings say."""

    name = "anthropic"
    wire = "anthropic"

    def __init__(self, settings: LlmSettings, api_key: str) -> None:
        self.settings = settings
        self.model = settings.model_name
        self.client = anthropic.Anthropic(
            api_key=api_key, base_url=settings.base_url, max_retries=0, timeout=settings.request_timeout_seconds
        )

    def arguments(self, request: ModelRequest) -> dict[str, Any]:
        limit = self.settings.max_output_tokens or ANTHROPIC_MAX_OUTPUT_TOKENS
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": limit,
            **wire_anthropic.request_parameters(request, self.settings.cache_ttl),
        }
        if not arguments["tools"]:
            del arguments["tools"]
        thinking = thinking_parameter(self.settings, self.model, limit)
        if thinking is not None:
            arguments["thinking"] = thinking
        if self.settings.effort is not None:
            arguments["output_config"] = {"effort": self.settings.effort}
        if self.settings.temperature is not None:
            arguments["temperature"] = self.settings.temperature
        return split_arguments(self.client.messages.create, arguments)

    def complete(self, request: ModelRequest) -> ModelReply:
        arguments = self.arguments(request)
        if not self.settings.stream:
            return wire_anthropic.reply_from_message(self.client.messages.create(**arguments))
        accumulator = wire_anthropic.StreamAccumulator()
        with self.client.messages.create(**arguments, stream=True) as stream:
            for event in stream:
                accumulator.feed(event)
        return accumulator.reply()

    def facts(self) -> ServerFacts:
        """The model's context window and output limit from the Models API; empty when it cannot tell."""
        models = getattr(self.client, "models", None)  # absent before anthropic 0.45
        if models is None:
            return ServerFacts()
        try:
            info = models.retrieve(self.model)
        except API_FAILURES:
            return ServerFacts()
        thinking = getattr(getattr(getattr(info, "capabilities", None), "thinking", None), "types", None)
        types = [
            name
            for name in ("adaptive", "enabled", "disabled", "between_tools")
            if getattr(getattr(thinking, name, None), "supported", False)
        ]
        return ServerFacts(
            context_window=int(getattr(info, "max_input_tokens", 0) or 0),
            max_output=int(getattr(info, "max_tokens", 0) or 0),
            thinking_types=types,
        )

    def close(self) -> None:
        self.client.close()
