"""The Anthropic Messages API through the official SDK (its own retries off; see ``retry.py``)."""

from __future__ import annotations

from typing import Any

import anthropic

from agent.policies.llm import wire_anthropic
from agent.policies.llm.reply import IncompleteResponse, ModelReply, ModelRequest
from agent.policies.llm.settings import ANTHROPIC_MAX_OUTPUT_TOKENS, LlmSettings


class AnthropicProvider:
    """One ``messages.create`` per :meth:`complete`, streamed (SSE) or not as the settings say."""

    name = "anthropic"

    def __init__(self, settings: LlmSettings, api_key: str) -> None:
        self.settings = settings
        self.model = settings.model_name
        self.client = anthropic.Anthropic(
            api_key=api_key, base_url=settings.base_url, max_retries=0, timeout=settings.request_timeout_seconds
        )

    def complete(self, request: ModelRequest) -> ModelReply:
        limit = self.settings.max_output_tokens or ANTHROPIC_MAX_OUTPUT_TOKENS
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": limit,
            **wire_anthropic.request_parameters(request),
        }
        if not arguments["tools"]:
            del arguments["tools"]
        if self.settings.temperature is not None:
            arguments["temperature"] = self.settings.temperature
        if not self.settings.stream:
            message = self.client.messages.create(**arguments)
            if not isinstance(message, anthropic.types.Message):
                raise IncompleteResponse(f"unexpected response type {type(message).__name__}")
            return wire_anthropic.reply_from_message(message)
        accumulator = wire_anthropic.StreamAccumulator()
        with self.client.messages.create(**arguments, stream=True) as stream:
            for event in stream:
                accumulator.feed(event)
        return accumulator.reply()

    def close(self) -> None:
        self.client.close()
