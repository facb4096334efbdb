"""OpenAI Chat Completions through the official SDK: api.openai.com or any OpenAI-compatible server
(SGLang, vLLM, llama.cpp) given with ``base_url``. The SDK's own retries are off; see ``retry.py``."""

from __future__ import annotations

from typing import Any

import openai

from agent.policies.llm import wire_openai
from agent.policies.llm.reply import ModelReply, ModelRequest
from agent.policies.llm.settings import LlmSettings


class OpenAIProvider:
    """One ``chat.completions.create`` per :meth:`complete`, streamed (with usage) or not."""

    name = "openai"

    def __init__(self, settings: LlmSettings, api_key: str) -> None:
        self.settings = settings
        self.model = settings.model_name
        self.client = openai.OpenAI(
            api_key=api_key, base_url=settings.base_url, max_retries=0, timeout=settings.request_timeout_seconds
        )
        # OpenAI's reasoning models accept only max_completion_tokens; compatible servers know max_tokens.
        self.limit_key = "max_completion_tokens" if settings.base_url is None else "max_tokens"

    def complete(self, request: ModelRequest) -> ModelReply:
        arguments: dict[str, Any] = {"model": self.model, **wire_openai.request_parameters(request)}
        if self.settings.max_output_tokens is not None:
            arguments[self.limit_key] = self.settings.max_output_tokens
        if not arguments["tools"]:
            del arguments["tools"]
        if self.settings.temperature is not None:
            arguments["temperature"] = self.settings.temperature
        if not self.settings.stream:
            return wire_openai.reply_from_completion(self.client.chat.completions.create(**arguments))
        accumulator = wire_openai.StreamAccumulator()
        with self.client.chat.completions.create(
            **arguments, stream=True, stream_options={"include_usage": True}
        ) as stream:
            for chunk in stream:
                accumulator.feed(chunk)
        return accumulator.reply()

    def close(self) -> None:
        self.client.close()
