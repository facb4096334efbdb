"""The OpenAI Chat Completions wire format: ``tool_calls`` on assistant messages, ``role=tool`` results.

Pure data conversion, no network. Works with any OpenAI-compatible server (SGLang, vLLM, llama.cpp):
missing or repeated call ids are tolerated by the policy, and tool errors are marked in the result
text because this format has no error flag.
"""

from __future__ import annotations

import json
from typing import Any

from agent.policies.llm.pricing import TokenCounts
from agent.policies.llm.reply import IncompleteResponse, ModelReply, ModelRequest
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, UserTurn, arguments_json

ERROR_PREFIX = "ERROR: "


def request_parameters(request: ModelRequest) -> dict[str, Any]:
    """``messages`` and ``tools`` for ``chat.completions.create``."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema", {"type": "object"}),
            },
        }
        for tool in request.tools
    ]
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for turn in request.turns:
        messages.extend(_messages(turn))
    return {"messages": messages, "tools": tools}


def _messages(turn: AssistantTurn | UserTurn) -> list[dict[str, Any]]:
    if isinstance(turn, AssistantTurn):
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
                }
                for call in turn.calls
            ]
        elif not turn.text:
            message["content"] = "(no reply)"
        return [message]
    messages: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": result.call_id,
            "content": (ERROR_PREFIX if result.is_error else "") + (result.content or "(empty)"),
        }
        for result in turn.results
    ]
    if turn.notes or not messages:
        messages.append({"role": "user", "content": "\n\n".join(turn.notes) or "Continue."})
    return messages


def parse_arguments(text: str | None) -> dict[str, Any] | str:
    if text is None or not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    return parsed if isinstance(parsed, dict) else text


def _tokens(usage: Any) -> TokenCounts:
    if usage is None:
        return TokenCounts()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    written = int(getattr(details, "cache_write_tokens", 0) or 0)  # reported by newer API versions only
    return TokenCounts(
        input_tokens=int(usage.prompt_tokens or 0),
        output_tokens=int(usage.completion_tokens or 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def reply_from_completion(completion: Any) -> ModelReply:
    """A reply from a complete ``ChatCompletion``; a response without choices is incomplete."""
    if not getattr(completion, "choices", None):
        raise IncompleteResponse("the response has no choices")
    choice = completion.choices[0]
    calls = []
    for call in choice.message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is None:
            continue
        calls.append(
            ToolCallRecord(id=call.id or "", name=function.name or "", arguments=parse_arguments(function.arguments))
        )
    return ModelReply(
        text=choice.message.content or "",
        calls=calls,
        stop_reason=choice.finish_reason or "",
        tokens=_tokens(completion.usage),
        model=completion.model or "",
    )


class StreamAccumulator:
    """Builds a reply from ``ChatCompletionChunk`` objects (tool-call fragments are keyed by index)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.tokens = TokenCounts()
        self.model = ""
        self.finish_reason = ""

    def feed(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        if getattr(chunk, "usage", None) is not None:
            self.tokens = _tokens(chunk.usage)
        for choice in getattr(chunk, "choices", None) or []:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None and delta.content:
                self.text.append(delta.content)
            for fragment in (delta.tool_calls if delta is not None else None) or []:
                entry = self.calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = entry["id"] or (fragment.id or "")
                if fragment.function is not None:
                    if fragment.function.name and fragment.function.name != entry["name"]:
                        entry["name"] += fragment.function.name
                    entry["arguments"] += fragment.function.arguments or ""
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def reply(self) -> ModelReply:
        if not self.finish_reason:
            raise IncompleteResponse("the stream ended before a finish_reason")
        calls = [
            ToolCallRecord(id=entry["id"], name=entry["name"], arguments=parse_arguments(entry["arguments"]))
            for _, entry in sorted(self.calls.items())
        ]
        return ModelReply(
            text="".join(self.text), calls=calls, stop_reason=self.finish_reason, tokens=self.tokens, model=self.model
        )
