"""The Anthropic Messages wire format: tool_use / tool_result blocks, thinking blocks, cache breakpoints.

Pure data conversion, no network: request pieces from neutral turns, and a :class:`ModelReply` from a
complete ``Message`` or from the raw stream events (message_start, content_block_start/delta/stop,
message_delta, message_stop). Blocks are read by their ``type`` so that an SDK release that predates a
block type (thinking, redacted_thinking) still hands its fields through.

Thinking blocks (and redacted ones) come back as :class:`ReasoningRecord` and are sent back unchanged, in
front of the turn's text and tool calls, for as long as the policy keeps them (it drops them when it
edits the conversation before them, which would fail the API's prefix check).
"""

from __future__ import annotations

import json
from typing import Any

from agent.policies.llm.pricing import TokenCounts
from agent.policies.llm.reply import IncompleteResponse, ModelReply, ModelRequest
from agent.policies.llm.turns import AssistantTurn, ReasoningRecord, ToolCallRecord, UserTurn

EPHEMERAL = {"type": "ephemeral"}
REPLAYED = ("thinking", "redacted_thinking")


def request_parameters(request: ModelRequest, stable_ttl: str = "1h") -> dict[str, Any]:
    """``system``, ``tools`` and ``messages`` for ``messages.create``. The stable prefix (tools and system
    prompt) carries a breakpoint with ``stable_ttl``; the turns the request names as reusable carry
    5-minute ones (the API wants longer lifetimes before shorter ones, which this order keeps)."""
    stable = {"type": "ephemeral", "ttl": stable_ttl} if stable_ttl != "5m" else EPHEMERAL
    tools = [
        {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "input_schema": tool.get("input_schema", {"type": "object"}),
        }
        for tool in request.tools
    ]
    if tools:
        tools[-1]["cache_control"] = stable
    system = [{"type": "text", "text": request.system, "cache_control": stable}]
    messages = [_message(turn) for turn in request.turns]
    # The API allows four breakpoints: tools and system take two, the history gets the other two.
    for index in sorted(set(request.cache_breakpoints), reverse=True)[:2]:
        if 0 <= index < len(messages) - 1:
            blocks = messages[index]["content"]
            blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return {"system": system, "tools": tools, "messages": messages}


def _reasoning_block(record: ReasoningRecord) -> dict[str, Any]:
    if record.kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": record.signature}
    return {"type": "thinking", "thinking": record.text, "signature": record.signature}


def _message(turn: AssistantTurn | UserTurn) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if isinstance(turn, AssistantTurn):
        blocks = [_reasoning_block(record) for record in turn.reasoning if record.kind in REPLAYED]
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for call in turn.calls:
            # The API wants an object here; malformed text is echoed under a key so the model sees it.
            tool_input = call.arguments if isinstance(call.arguments, dict) else {"unparsed_arguments": call.arguments}
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
        if not blocks:
            blocks.append({"type": "text", "text": "(no reply)"})
        return {"role": "assistant", "content": blocks}
    for result in turn.results:
        blocks.append(
            {
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": result.content or "(empty)",
                "is_error": result.is_error,
            }
        )
    blocks.extend({"type": "text", "text": text} for text in turn.texts())
    if not blocks:
        blocks.append({"type": "text", "text": "Continue."})
    return {"role": "user", "content": blocks}


def parse_arguments(value: object) -> dict[str, Any] | str:
    """A tool input as an object, or the raw text when it is not a JSON object (answered with an error)."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return json.dumps(value)
    if not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    return parsed if isinstance(parsed, dict) else value


def tokens_from(usage: Any) -> TokenCounts:
    uncached = int(getattr(usage, "input_tokens", 0) or 0)
    read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    creation = getattr(usage, "cache_creation", None)
    hour = int(field_of(creation, "ephemeral_1h_input_tokens") or 0) if creation is not None else 0
    return TokenCounts(
        input_tokens=uncached + read + written,
        output_tokens=int(usage.output_tokens or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=min(hour, written),
    )


def field_of(value: Any, name: str) -> Any:
    """An attribute, or a key of the plain dict an SDK release that predates the field leaves."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _refusal(stop_details: Any) -> tuple[str, str]:
    if stop_details is None:
        return "", ""
    return str(field_of(stop_details, "category") or ""), str(field_of(stop_details, "explanation") or "")


def reply_from_message(message: Any) -> ModelReply:
    """A reply from a complete ``Message`` (any SDK release)."""
    text_parts: list[str] = []
    calls: list[ToolCallRecord] = []
    reasoning: list[ReasoningRecord] = []
    for block in message.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            text_parts.append(block.text)
        elif kind == "tool_use":
            calls.append(ToolCallRecord(id=block.id, name=block.name, arguments=parse_arguments(block.input)))
        elif kind == "thinking":
            reasoning.append(ReasoningRecord(kind="thinking", text=block.thinking, signature=block.signature))
        elif kind == "redacted_thinking":
            reasoning.append(ReasoningRecord(kind="redacted_thinking", signature=block.data))
    category, explanation = _refusal(field_of(message, "stop_details"))
    return ModelReply(
        text="\n".join(text_parts),
        calls=calls,
        reasoning=reasoning,
        stop_reason=message.stop_reason or "",
        refusal_category=category,
        refusal_explanation=explanation,
        tokens=tokens_from(message.usage),
        model=message.model,
    )


class StreamAccumulator:
    """Builds a reply from raw stream events; :meth:`reply` refuses a stream that never finished."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: TokenCounts = TokenCounts()
        self.model = ""
        self.stop_reason = ""
        self.refusal = ("", "")
        self.finished = False

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self.usage, self.model = tokens_from(event.message.usage), event.message.model
        elif kind == "content_block_start":
            self.blocks[event.index] = _opening(event.content_block)
        elif kind == "content_block_delta":
            self._delta(event)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            details = field_of(event.delta, "stop_details")
            self.refusal = _refusal(details) if details is not None else self.refusal
            self._final_usage(event.usage)
        elif kind == "message_stop":
            self.finished = True

    def _delta(self, event: Any) -> None:
        block = self.blocks.get(event.index)
        if block is None:
            raise IncompleteResponse(f"stream delta for content block {event.index}, which never started")
        delta = event.delta
        field = {
            "text_delta": ("text", "text"),
            "input_json_delta": ("json", "partial_json"),
            "thinking_delta": ("thinking", "thinking"),
            "signature_delta": ("signature", "signature"),
        }.get(getattr(delta, "type", ""))
        if field is not None:
            block[field[0]] = block.get(field[0], "") + (getattr(delta, field[1], "") or "")

    def _final_usage(self, usage: Any) -> None:
        # message_delta carries cumulative counts; input counts appear there only on some API versions.
        read = getattr(usage, "cache_read_input_tokens", None)
        written = getattr(usage, "cache_creation_input_tokens", None)
        if getattr(usage, "input_tokens", None) is not None:
            read_count = read if read is not None else self.usage.cache_read_tokens
            written_count = written if written is not None else self.usage.cache_write_tokens
            self.usage = self.usage.model_copy(
                update={
                    "input_tokens": usage.input_tokens + read_count + written_count,
                    "cache_read_tokens": read_count,
                    "cache_write_tokens": written_count,
                }
            )
        self.usage = self.usage.model_copy(update={"output_tokens": usage.output_tokens})

    def reply(self) -> ModelReply:
        if not self.finished:
            raise IncompleteResponse("the stream ended before message_stop")
        text_parts: list[str] = []
        calls: list[ToolCallRecord] = []
        reasoning: list[ReasoningRecord] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["kind"] == "text":
                text_parts.append(block["text"])
            elif block["kind"] == "tool_use":
                calls.append(
                    ToolCallRecord(id=block["id"], name=block["name"], arguments=parse_arguments(block["json"]))
                )
            elif block["kind"] == "thinking":
                reasoning.append(ReasoningRecord(kind="thinking", text=block["thinking"], signature=block["signature"]))
            elif block["kind"] == "redacted_thinking":
                reasoning.append(ReasoningRecord(kind="redacted_thinking", signature=block["data"]))
        return ModelReply(
            text="\n".join(text_parts),
            calls=calls,
            reasoning=reasoning,
            stop_reason=self.stop_reason,
            refusal_category=self.refusal[0],
            refusal_explanation=self.refusal[1],
            tokens=self.usage,
            model=self.model,
        )


def _opening(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", "")
    if kind == "tool_use":
        return {"kind": kind, "id": block.id, "name": block.name, "json": ""}
    if kind == "thinking":
        return {"kind": kind, "thinking": block.thinking or "", "signature": block.signature or ""}
    if kind == "redacted_thinking":
        return {"kind": kind, "data": block.data}
    return {"kind": kind, "text": getattr(block, "text", "") or ""}
