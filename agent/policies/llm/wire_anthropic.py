"""The Anthropic Messages wire format: tool_use / tool_result blocks and prompt-cache breakpoints.

Pure data conversion, no network: request pieces from neutral turns, and a :class:`ModelReply` from a
complete ``Message`` or from the raw stream events (message_start, content_block_start/delta/stop,
message_delta, message_stop).

Thinking blocks in replies are read past and never sent back. Models with preserved thinking check a
returned thinking block against everything before it, and this policy edits its history on purpose
(the state document closes each request, old outputs are pruned, old turns folded), so returned blocks
would fail that check; a history without thinking blocks is what those models accept for edited
conversations.
"""

from __future__ import annotations

import json
from typing import Any

from anthropic import types as anthropic_types

from agent.policies.llm.pricing import TokenCounts
from agent.policies.llm.reply import IncompleteResponse, ModelReply, ModelRequest
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, UserTurn

EPHEMERAL = {"type": "ephemeral"}


def request_parameters(request: ModelRequest) -> dict[str, Any]:
    """``system``, ``tools`` and ``messages`` for ``messages.create``. The stable prefix (tools and
    system prompt) carries a cache breakpoint, and so do the turns the request names as reusable."""
    tools = [
        {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "input_schema": tool.get("input_schema", {"type": "object"}),
        }
        for tool in request.tools
    ]
    if tools:
        tools[-1]["cache_control"] = EPHEMERAL
    system = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    messages = [_message(turn) for turn in request.turns]
    # The API allows four breakpoints: tools and system take two, the history gets the other two.
    for index in sorted(set(request.cache_breakpoints), reverse=True)[:2]:
        if 0 <= index < len(messages) - 1:
            blocks = messages[index]["content"]
            blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return {"system": system, "tools": tools, "messages": messages}


def _message(turn: AssistantTurn | UserTurn) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if isinstance(turn, AssistantTurn):
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
    for note in turn.notes:
        blocks.append({"type": "text", "text": note})
    if not blocks:
        blocks.append({"type": "text", "text": "Continue."})
    return {"role": "user", "content": blocks}


def _arguments(value: object) -> dict[str, Any] | str:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return _parse_arguments(value)
    return json.dumps(value)


def _parse_arguments(text: str) -> dict[str, Any] | str:
    if not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    return parsed if isinstance(parsed, dict) else text


def _tokens(usage: Any) -> TokenCounts:
    uncached = int(getattr(usage, "input_tokens", 0) or 0)
    read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    return TokenCounts(
        input_tokens=uncached + read + written,
        output_tokens=int(usage.output_tokens or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def reply_from_message(message: anthropic_types.Message) -> ModelReply:
    text_parts: list[str] = []
    calls: list[ToolCallRecord] = []
    for block in message.content:
        if isinstance(block, anthropic_types.TextBlock):
            text_parts.append(block.text)
        elif isinstance(block, anthropic_types.ToolUseBlock):
            calls.append(ToolCallRecord(id=block.id, name=block.name, arguments=_arguments(block.input)))
    return ModelReply(
        text="\n".join(text_parts),
        calls=calls,
        stop_reason=message.stop_reason or "",
        tokens=_tokens(message.usage),
        model=message.model,
    )


class StreamAccumulator:
    """Builds a reply from raw stream events; :meth:`reply` refuses a stream that never finished."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.started: set[int] = set()  # every block index seen, kept or not (thinking blocks are not)
        self.usage: TokenCounts = TokenCounts()
        self.model = ""
        self.stop_reason = ""
        self.finished = False

    def feed(self, event: object) -> None:
        if isinstance(event, anthropic_types.RawMessageStartEvent):
            self.usage, self.model = _tokens(event.message.usage), event.message.model
        elif isinstance(event, anthropic_types.RawContentBlockStartEvent):
            self.started.add(event.index)
            block = event.content_block
            if isinstance(block, anthropic_types.ToolUseBlock):
                self.blocks[event.index] = {"kind": "tool", "id": block.id, "name": block.name, "json": ""}
            elif isinstance(block, anthropic_types.TextBlock):
                self.blocks[event.index] = {"kind": "text", "text": block.text}
        elif isinstance(event, anthropic_types.RawContentBlockDeltaEvent):
            self._delta(event)
        elif isinstance(event, anthropic_types.RawMessageDeltaEvent):
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._final_usage(event.usage)
        elif isinstance(event, anthropic_types.RawMessageStopEvent):
            self.finished = True

    def _delta(self, event: anthropic_types.RawContentBlockDeltaEvent) -> None:
        if event.index not in self.started:
            raise IncompleteResponse(f"stream delta for content block {event.index}, which never started")
        block = self.blocks.get(event.index)
        if block is None:
            return
        if isinstance(event.delta, anthropic_types.TextDelta):
            block["text"] = block.get("text", "") + event.delta.text
        elif isinstance(event.delta, anthropic_types.InputJSONDelta):
            block["json"] = block.get("json", "") + event.delta.partial_json

    def _final_usage(self, usage: anthropic_types.MessageDeltaUsage) -> None:
        # message_delta carries cumulative counts; input counts appear there only on some API versions.
        read = usage.cache_read_input_tokens
        written = usage.cache_creation_input_tokens
        if usage.input_tokens is not None:
            read_count = read if read is not None else self.usage.cache_read_tokens
            written_count = written if written is not None else self.usage.cache_write_tokens
            self.usage = TokenCounts(
                input_tokens=usage.input_tokens + read_count + written_count,
                cache_read_tokens=read_count,
                cache_write_tokens=written_count,
            )
        self.usage = self.usage.model_copy(update={"output_tokens": usage.output_tokens})

    def reply(self) -> ModelReply:
        if not self.finished:
            raise IncompleteResponse("the stream ended before message_stop")
        text_parts: list[str] = []
        calls: list[ToolCallRecord] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["kind"] == "text":
                text_parts.append(block["text"])
            else:
                calls.append(
                    ToolCallRecord(id=block["id"], name=block["name"], arguments=_parse_arguments(block["json"]))
                )
        return ModelReply(
            text="\n".join(text_parts), calls=calls, stop_reason=self.stop_reason, tokens=self.usage, model=self.model
        )
