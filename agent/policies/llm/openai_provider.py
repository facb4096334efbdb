"""OpenAI through the official SDK, over Chat Completions or the Responses API: api.openai.com or any
OpenAI-compatible server (SGLang, vLLM, llama.cpp) given with ``base_url``. The SDK's own retries are
off; see ``retry.py``. Parameters follow the model family (:mod:`agent.policies.llm.models`), not the URL:
reasoning models get ``max_completion_tokens`` and no ``temperature`` unless their effort is ``none``."""

from __future__ import annotations

from typing import Any

import openai

from agent.events import UsageError
from agent.policies.llm import wire_openai, wire_responses
from agent.policies.llm.models import ServerFacts, choose_wire, is_official_openai, openai_profile
from agent.policies.llm.reply import ModelReply, ModelRequest
from agent.policies.llm.retry import API_FAILURES
from agent.policies.llm.sdk_compat import split_arguments
from agent.policies.llm.settings import LlmSettings


class OpenAIProvider:
    """One ``chat.completions.create`` or ``responses.create`` per :meth:`complete`, streamed or not."""

    name = "openai"

    def __init__(self, settings: LlmSettings, api_key: str) -> None:
        self.settings = settings
        self.model = settings.model_name
        self.wire = choose_wire("openai", self.model, settings.base_url, settings.wire)
        self.profile = openai_profile(self.model)
        self.official = is_official_openai(settings.base_url)
        self.reasoning = settings.reasoning_model if settings.reasoning_model is not None else self.profile.reasoning
        if settings.effort == "none" and not self.profile.effort_none_allowed:
            raise UsageError(f"{self.model} accepts no reasoning effort 'none'; choose minimal, low or higher")
        self.client = openai.OpenAI(
            api_key=api_key, base_url=settings.base_url, max_retries=0, timeout=settings.request_timeout_seconds
        )

    def _sampling(self, arguments: dict[str, Any]) -> None:
        # Reasoning models refuse sampling parameters unless reasoning is off (effort none).
        if self.settings.temperature is not None and (not self.reasoning or self.settings.effort == "none"):
            arguments["temperature"] = self.settings.temperature

    def chat_arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": self.model, **wire_openai.request_parameters(request)}
        if self.settings.max_output_tokens is not None:
            key = "max_completion_tokens" if self.reasoning else "max_tokens"
            arguments[key] = self.settings.max_output_tokens
        if not arguments["tools"]:
            del arguments["tools"]
        if self.settings.effort is not None:
            arguments["reasoning_effort"] = self.settings.effort
        if self.settings.thinking in ("on", "off"):
            enabled = self.settings.thinking == "on"
            arguments["chat_template_kwargs"] = {"enable_thinking": enabled, "thinking": enabled}
        if self.official and request.cache_key:
            arguments["prompt_cache_key"] = request.cache_key
        self._sampling(arguments)
        return arguments

    def responses_arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model,
            "store": False,
            "include": wire_responses.INCLUDE,
            **wire_responses.request_parameters(request),
        }
        if not arguments["tools"]:
            del arguments["tools"]
        if self.settings.max_output_tokens is not None:
            arguments["max_output_tokens"] = self.settings.max_output_tokens
        if self.reasoning:
            reasoning: dict[str, Any] = {"summary": "auto"}
            if self.settings.effort is not None:
                reasoning["effort"] = self.settings.effort
            arguments["reasoning"] = reasoning
        if request.cache_key:
            arguments["prompt_cache_key"] = request.cache_key
        self._sampling(arguments)
        return arguments

    def complete(self, request: ModelRequest) -> ModelReply:
        if self.wire == "responses":
            return self._responses(request)
        create = self.client.chat.completions.create
        arguments = split_arguments(create, self.chat_arguments(request))
        if not self.settings.stream:
            return wire_openai.reply_from_completion(create(**arguments))
        accumulator = wire_openai.StreamAccumulator()
        with create(**arguments, stream=True, stream_options={"include_usage": True}) as stream:
            for chunk in stream:
                accumulator.feed(chunk)
        return accumulator.reply()

    def _responses(self, request: ModelRequest) -> ModelReply:
        create = self.client.responses.create
        arguments = split_arguments(create, self.responses_arguments(request))
        if not self.settings.stream:
            return wire_responses.reply_from_response(create(**arguments))
        accumulator = wire_responses.StreamAccumulator()
        with create(**arguments, stream=True) as stream:
            for event in stream:
                accumulator.feed(event)
        return accumulator.reply()

    def facts(self) -> ServerFacts:
        """A compatible server's ``max_model_len`` (SGLang and vLLM list it under ``/v1/models``); the
        model family's known limits on OpenAI's own endpoint."""
        if self.official:
            return ServerFacts(context_window=self.profile.context_window, max_output=self.profile.max_output)
        try:
            listed = list(self.client.models.list())
        except API_FAILURES:
            return ServerFacts()
        for entry in listed:
            length = getattr(entry, "max_model_len", None)
            if isinstance(length, int) and (entry.id == self.model or len(listed) == 1):
                return ServerFacts(context_window=length)
        return ServerFacts()

    def close(self) -> None:
        self.client.close()
