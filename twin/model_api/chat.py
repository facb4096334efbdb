"""OpenAI Chat Completions as the scripted server writes it, and the checks the real service makes.

Reasoning goes out in ``reasoning_field``: ``reasoning_content`` (SGLang, DeepSeek, Kimi) or
``reasoning`` (vLLM 0.33); cached tokens follow OpenAI's automatic prefix caching.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from twin.model_api.script import ModelTurn
from twin.model_api.wire import CHARS_PER_TOKEN, call_id, output_tokens, pieces


def openai_error(error_type: str, message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _openai_calls(turn: ModelTurn) -> list[dict[str, Any]]:
    return [
        {
            "id": call_id("openai", tool),
            "type": "function",
            "function": {"name": tool.name, "arguments": tool.arguments_text()},
        }
        for tool in turn.tool_calls
    ]


def _openai_usage(prompt: int, cached: int, turn: ModelTurn) -> dict[str, Any]:
    completion = output_tokens(turn)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def openai_completion(
    turn: ModelTurn, model: str, prompt: int, cached: int, reasoning_field: str = "reasoning_content"
) -> dict[str, Any]:
    refused = turn.stop_reason == "refusal"
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if refused else turn.text or None,
        "refusal": turn.text if refused else None,
    }
    if turn.thinking is not None:
        message[reasoning_field] = turn.thinking
    calls = _openai_calls(turn)
    if calls:
        message["tool_calls"] = calls
    finish = "stop" if refused else turn.stop_reason or ("tool_calls" if calls else "stop")
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": _openai_usage(prompt, cached, turn),
    }


def openai_chunks(
    turn: ModelTurn,
    model: str,
    prompt: int,
    cached: int,
    include_usage: bool,
    reasoning_field: str = "reasoning_content",
) -> list[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if turn.thinking is not None:
        chunks.extend(chunk({reasoning_field: piece}) for piece in pieces(turn.thinking))
    if turn.text:
        chunks.extend(chunk({"content": piece}) for piece in pieces(turn.text))
    for index, call in enumerate(_openai_calls(turn)):
        opening = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opening]}))
        chunks.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(call["function"]["arguments"])
        )
    chunks.append(chunk({}, turn.stop_reason or ("tool_calls" if turn.tool_calls else "stop")))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": _openai_usage(prompt, cached, turn)})
    return chunks


def openai_problems(body: dict[str, Any]) -> list[str]:
    """What Chat Completions would reject: missing fields, tool messages not answering the calls before."""
    problems = [f"'{name}' is a required property" for name in ("model", "messages") if name not in body]
    if "tools" in body and not body["tools"]:
        problems.append("[] is too short - 'tools'")
    pending: set[str] = set()
    for position, message in enumerate(body.get("messages") or []):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                problems.append(
                    f"messages.[{position}]: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'"
                )
            pending.discard(message.get("tool_call_id"))
            continue
        if pending:
            problems.append(
                f"messages.[{position}]: an assistant message with 'tool_calls' must be followed "
                f"by tool messages responding to each 'tool_call_id'; missing {sorted(pending)}"
            )
            pending = set()
        if role == "assistant":
            pending = {call["id"] for call in message.get("tool_calls") or []}
    if pending:
        problems.append(f"the last assistant message has unanswered tool_call ids {sorted(pending)}")
    return problems


class OpenAICache:
    """Automatic prefix caching: the longest prefix shared with an earlier request, in 128-token steps
    once it reaches 1024 tokens."""

    def __init__(self) -> None:
        self.previous: list[str] = []

    def cached_tokens(self, body: dict[str, Any]) -> int:
        text = json.dumps([body.get("tools"), body.get("messages")], sort_keys=True)
        best = max((_shared_prefix(text, earlier) for earlier in self.previous[-8:]), default=0)
        self.previous.append(text)
        shared_tokens = best // CHARS_PER_TOKEN
        return 0 if shared_tokens < 1024 else shared_tokens // 128 * 128


def _shared_prefix(first: str, second: str) -> int:
    """Length of the common prefix (binary search over slice comparisons, which run at C speed)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
