"""The OpenAI Chat Completions wire format: ``tool_calls`` on assistant messages, ``role=tool`` results.

Pure data conversion, no network. Works with OpenAI and any OpenAI-compatible server (SGLang, vLLM,
llama.cpp, hosted DeepSeek or Kimi): tool errors are marked in the result text because this format has
no error flag. Reasoning comes back as ``reasoning_content`` (SGLang, DeepSeek, Kimi) or ``reasoning``
(vLLM 0.33); servers in thinking mode refuse a history whose assistant tool-call messages lack it, so it
is sent back on every such message in the field it came in (an empty string when a turn had none).
"""

from __future__ import annotations

import json
from typing import Any

from agent.policies.llm.pricing import TokenCounts
from agent.policies.llm.reply import IncompleteResponse, ModelReply, ModelRequest
from agent.policies.llm.turns import AssistantTurn, ReasoningRecord, ToolCallRecord, UserTurn

ERROR_PREFIX = "ERROR: "
REASONING_FIELDS = ("reasoning_content", "reasoning")


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
    field = reasoning_field(request.turns)
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for turn in request.turns:
        messages.extend(_messages(turn, field))
    return {"messages": messages, "tools": tools}


def reasoning_field(turns: list[AssistantTurn | UserTurn]) -> str | None:
    """The field this conversation's reasoning travels in, or None when no turn carried any."""
    for turn in turns:
        if isinstance(turn, AssistantTurn):
            for record in turn.reasoning:
                if record.kind == "reasoning_content":
                    return record.field
    return None


def wrapped_arguments(arguments: dict[str, Any] | str) -> str:
    """The arguments as JSON text. Broken JSON (a reply cut at the token limit) is wrapped in an object,
    as on the Anthropic wire, so the request stays valid JSON and the model still sees what it wrote."""
    if isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    return json.dumps({"unparsed_arguments": arguments}, ensure_ascii=False)


def _messages(turn: AssistantTurn | UserTurn, field: str | None) -> list[dict[str, Any]]:
    if isinstance(turn, AssistantTurn):
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": wrapped_arguments(call.arguments)},
                }
                for call in turn.calls
            ]
            if field is not None:
                message[field] = "".join(record.text for record in turn.reasoning if record.kind == "reasoning_content")
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
    if turn.texts() or not messages:
        messages.append({"role": "user", "content": "\n\n".join(turn.texts()) or "Continue."})
    return messages


def parse_arguments(text: str | None) -> dict[str, Any] | str:
    if text is None or not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    return parsed if isinstance(parsed, dict) else text


def tokens_from(usage: Any) -> TokenCounts:
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


def _reasoning_of(message: Any) -> list[ReasoningRecord]:
    """``reasoning_content`` / ``reasoning`` of a message or delta (extra fields the SDK keeps as-is)."""
    for field in REASONING_FIELDS:
        value = getattr(message, field, None)
        if isinstance(value, str):
            return [ReasoningRecord(kind="reasoning_content", text=value, field=field)]
    return []


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
    refusal = getattr(choice.message, "refusal", None) or ""
    stop = choice.finish_reason or ""
    return ModelReply(
        text=choice.message.content or refusal,
        calls=calls,
        reasoning=_reasoning_of(choice.message),
        stop_reason="refusal" if refusal and not calls else stop,
        refusal_category=stop if stop == "content_filter" else "",
        refusal_explanation=refusal,
        tokens=tokens_from(completion.usage),
        model=completion.model or "",
    )


class StreamAccumulator:
    """Builds a reply from ``ChatCompletionChunk`` objects (tool-call fragments are keyed by index)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: dict[str, list[str]] = {}
        self.calls: dict[int, dict[str, str]] = {}
        self.tokens = TokenCounts()
        self.model = ""
        self.finish_reason = ""

    def feed(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        if getattr(chunk, "usage", None) is not None:
            self.tokens = tokens_from(chunk.usage)
        for choice in getattr(chunk, "choices", None) or []:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                self._delta(delta)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _delta(self, delta: Any) -> None:
        if delta.content:
            self.text.append(delta.content)
        for record in _reasoning_of(delta):
            self.reasoning.setdefault(record.field, []).append(record.text)
        for fragment in delta.tool_calls or []:
            entry = self.calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] = entry["id"] or (fragment.id or "")
            if fragment.function is not None:
                if fragment.function.name and fragment.function.name != entry["name"]:
                    entry["name"] += fragment.function.name
                entry["arguments"] += fragment.function.arguments or ""

    def reply(self) -> ModelReply:
        if not self.finish_reason:
            raise IncompleteResponse("the stream ended before a finish_reason")
        calls = [
            ToolCallRecord(id=entry["id"], name=entry["name"], arguments=parse_arguments(entry["arguments"]))
            for _, entry in sorted(self.calls.items())
        ]
        reasoning = [
            ReasoningRecord(kind="reasoning_content", text="".join(parts), field=field)
            for field, parts in self.reasoning.items()
        ][:1]
        stop = self.finish_reason
        return ModelReply(
            text="".join(self.text),
            calls=calls,
            reasoning=reasoning,
            stop_reason=stop,
            refusal_category=stop if stop == "content_filter" else "",
            tokens=self.tokens,
            model=self.model,
        )
