"""Generation endpoints: OpenAI chat and completions (streaming and not), and SGLang ``/generate``."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from twin import textgen
from twin.engine.http import BadRequest, Response, StreamResponse
from twin.engine.scheduler import RequestStats, Scheduler

NO_LIMIT_CAP = 4096
_counter = itertools.count(1)


@dataclass
class Sampling:
    max_tokens: int
    ignore_eos: bool
    variant: int


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def chat_prompt(body: dict[str, Any]) -> tuple[str, int]:
    """The text the model answers (the last user turn) and the prompt's token count."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    texts = [_content_text(message.get("content")) if isinstance(message, dict) else "" for message in messages]
    users = [
        text
        for message, text in zip(messages, texts, strict=True)
        if isinstance(message, dict) and message.get("role") == "user"
    ]
    tokens = sum(textgen.count_tokens(text) + 4 for text in texts) + 3
    return (users[-1] if users else texts[-1]), tokens


def completion_prompt(prompt: Any) -> tuple[str, int]:
    if isinstance(prompt, list) and prompt and all(isinstance(item, int) for item in prompt):
        return " ".join(str(item) for item in prompt[:64]), len(prompt)
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise BadRequest("'prompt' must be a string or a list of token ids (one prompt per request)")
    return prompt, textgen.count_tokens(prompt)


def sampling(body: dict[str, Any], default_max: int | None, limit: int, keys: tuple[str, ...]) -> Sampling:
    if int(body.get("n") or 1) != 1:
        raise BadRequest("only n=1 is supported")
    maximum = next((body[key] for key in keys if body.get(key) is not None), default_max)
    ignore_eos = bool(body.get("ignore_eos", False))
    if maximum is None:
        maximum = NO_LIMIT_CAP if ignore_eos else limit
    if not isinstance(maximum, int) or maximum < 0:
        raise BadRequest(f"{keys[0]} must be a non-negative integer")
    temperature = body.get("temperature", 1.0)
    seed = body.get("seed")
    greedy = temperature is not None and float(temperature) == 0.0
    variant = 0 if greedy else (int(seed) if isinstance(seed, int) else next(_counter)) % textgen.VARIANTS
    return Sampling(min(maximum, limit), ignore_eos, variant)


def sse(document: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(document, separators=(",", ":")).encode("utf-8") + b"\n\n"


DONE = b"data: [DONE]\n\n"


def usage(stats: RequestStats) -> dict[str, int]:
    return {
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "total_tokens": stats.prompt_tokens + stats.completion_tokens,
    }


class GenerationApi:
    def __init__(self, scheduler: Scheduler, served_name: str, context_length: int, garbled: bool) -> None:
        self.scheduler, self.served_name, self.garbled = scheduler, served_name, garbled
        self.context_length = context_length

    def _pieces(self, prompt: str, prompt_tokens: int, options: Sampling) -> tuple[list[str], str]:
        room = max(0, self.context_length - prompt_tokens)
        return textgen.generate(
            prompt, min(options.max_tokens, room), options.ignore_eos, options.variant, broken=self.garbled
        )

    async def _collect(self, prompt_tokens: int, pieces: list[str], stats: RequestStats) -> str:
        output = []
        stream = self.scheduler.stream(prompt_tokens, pieces, stats)
        async for chunk in stream:
            output.extend(chunk)
        return "".join(output)

    async def chat(self, body: dict[str, Any]) -> Response | StreamResponse:
        prompt, prompt_tokens = chat_prompt(body)
        options = sampling(body, None, self.context_length, ("max_completion_tokens", "max_tokens"))
        pieces, finish = self._pieces(prompt, prompt_tokens, options)
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        stats = RequestStats()
        if not body.get("stream"):
            text = await self._collect(prompt_tokens, pieces, stats)
            return Response.json(
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": self.served_name,
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": text,
                                "reasoning_content": None,
                                "tool_calls": None,
                            },
                            "logprobs": None,
                            "finish_reason": finish,
                            "matched_stop": None,
                        }
                    ],
                    "usage": usage(stats),
                }
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            head = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.served_name,
            }
            first = True
            async for chunk in self.scheduler.stream(prompt_tokens, pieces, stats):
                delta = {"role": "assistant", "content": "".join(chunk)} if first else {"content": "".join(chunk)}
                first = False
                yield sse(
                    {
                        **head,
                        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
                    }
                )
            yield sse({**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}]})
            if include_usage:
                yield sse({**head, "choices": [], "usage": usage(stats)})
            yield DONE

        return StreamResponse(events())

    async def completions(self, body: dict[str, Any]) -> Response | StreamResponse:
        prompt, prompt_tokens = completion_prompt(body.get("prompt"))
        options = sampling(body, 16, self.context_length, ("max_tokens",))
        pieces, finish = self._pieces(prompt, prompt_tokens, options)
        ident, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        stats = RequestStats()
        head = {"id": ident, "object": "text_completion", "created": created, "model": self.served_name}
        if not body.get("stream"):
            text = await self._collect(prompt_tokens, pieces, stats)
            return Response.json(
                {
                    **head,
                    "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}],
                    "usage": usage(stats),
                }
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            async for chunk in self.scheduler.stream(prompt_tokens, pieces, stats):
                yield sse(
                    {
                        **head,
                        "choices": [{"index": 0, "text": "".join(chunk), "logprobs": None, "finish_reason": None}],
                    }
                )
            yield sse({**head, "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": finish}]})
            if include_usage:
                yield sse({**head, "choices": [], "usage": usage(stats)})
            yield DONE

        return StreamResponse(events())

    def _meta(self, ident: str, stats: RequestStats, finish: str | None, draft_tokens: int) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "id": ident,
            "finish_reason": {"type": finish} if finish else None,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
            "cached_tokens": 0,
            "e2e_latency": round(stats.latency, 4),
        }
        if self.scheduler.spec is not None and stats.verify_ct:
            meta.update(
                {
                    "spec_verify_ct": stats.verify_ct,
                    "spec_accept_length": round(stats.completion_tokens / stats.verify_ct, 4),
                    "spec_accept_rate": round(stats.accepted / (stats.verify_ct * max(1, draft_tokens - 1)), 4),
                    "spec_accept_token_num": stats.accepted,
                    "spec_draft_token_num": stats.verify_ct * max(1, draft_tokens - 1),
                }
            )
        return meta

    async def generate(self, body: dict[str, Any]) -> Response | StreamResponse:
        """SGLang native API: ``text`` or ``input_ids``, ``sampling_params``; streams cumulative text."""
        prompt, prompt_tokens = completion_prompt(body.get("input_ids") if "input_ids" in body else body.get("text"))
        params = body.get("sampling_params") or {}
        if not isinstance(params, dict):
            raise BadRequest("'sampling_params' must be an object")
        options = sampling(params, 128, self.context_length, ("max_new_tokens",))
        pieces, finish = self._pieces(prompt, prompt_tokens, options)
        ident, stats = uuid.uuid4().hex, RequestStats()
        draft_tokens = self.scheduler.spec.draft_tokens if self.scheduler.spec else 0
        if not body.get("stream"):
            text = await self._collect(prompt_tokens, pieces, stats)
            return Response.json({"text": text, "meta_info": self._meta(ident, stats, finish, draft_tokens)})

        async def events() -> AsyncIterator[bytes]:
            text = ""
            async for chunk in self.scheduler.stream(prompt_tokens, pieces, stats):
                text += "".join(chunk)
                yield sse({"text": text, "meta_info": self._meta(ident, stats, None, draft_tokens)})
            yield sse({"text": text, "meta_info": self._meta(ident, stats, finish, draft_tokens)})
            yield DONE

        return StreamResponse(events())
