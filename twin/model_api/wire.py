"""The Anthropic Messages wire as the scripted server writes it, helpers shared by all wires, and the
pairing checks the real API makes.

Replies: a complete JSON body, or the list of server-sent events (name, payload) of a stream. Checks:
the tool-use / tool-result pairing, so a client that leaves a call unanswered gets the same 400 it would
get from the real service (the model-specific rules are in ``model_rules``). Token counts are estimates
(4 characters a token); cached tokens follow the API's caching rules closely enough to test the
accounting, one-hour breakpoints included.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from typing import Any

from twin.model_api.script import Api, ModelTurn, ToolUse

CHARS_PER_TOKEN = 4
PIECE_CHARS = 24


def tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def call_id(api: Api, tool: ToolUse) -> str:
    if tool.id is not None:
        return tool.id
    return f"toolu_{uuid.uuid4().hex[:24]}" if api == "anthropic" else f"call_{uuid.uuid4().hex[:24]}"


def pieces(text: str) -> list[str]:
    return [text[start : start + PIECE_CHARS] for start in range(0, len(text), PIECE_CHARS)] or [""]


def output_tokens(turn: ModelTurn) -> int:
    if turn.output_tokens is not None:
        return turn.output_tokens
    return tokens(turn.text + "".join(tool.name + tool.arguments_text() for tool in turn.tool_calls))


# -- Anthropic Messages ---------------------------------------------------------------------------------


def anthropic_error(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def anthropic_message(turn: ModelTurn, model: str, usage: dict[str, Any], signature: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.thinking is not None:
        content.append({"type": "thinking", "thinking": turn.thinking, "signature": signature})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for tool in turn.tool_calls:
        # A malformed argument text is sent as it is (a string), as a faulty proxy would.
        arguments: Any = tool.arguments
        if isinstance(arguments, str):
            with contextlib.suppress(json.JSONDecodeError):
                arguments = json.loads(arguments)
        content.append({"type": "tool_use", "id": call_id("anthropic", tool), "name": tool.name, "input": arguments})
    stop = turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn")
    details = (
        {"type": "refusal", "category": turn.refusal_category, "explanation": "scripted refusal"}
        if stop == "refusal"
        else None
    )
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "stop_details": details,
        "usage": {**usage, "output_tokens": output_tokens(turn)},
    }


def _block_events(index: int, block: dict[str, Any], arguments_text: str) -> list[tuple[str, dict[str, Any]]]:
    """content_block_start, the deltas, content_block_stop for one block of a complete message."""
    if block["type"] == "thinking":
        opening: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            *({"type": "thinking_delta", "thinking": piece} for piece in pieces(block["thinking"])),
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    elif block["type"] == "text":
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
    else:
        opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in ["", *pieces(arguments_text)]]
    start = {"type": "content_block_start", "index": index, "content_block": opening}
    return [
        ("content_block_start", start),
        *(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}) for delta in deltas),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def anthropic_events(
    turn: ModelTurn, model: str, usage: dict[str, Any], signature: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    message = anthropic_message(turn, model, usage, signature)
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_details": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    arguments = iter(tool.arguments_text() for tool in turn.tool_calls)
    for index, block in enumerate(message["content"]):
        events.extend(_block_events(index, block, next(arguments) if block["type"] == "tool_use" else ""))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": message["stop_reason"],
                    "stop_sequence": None,
                    "stop_details": message["stop_details"],
                },
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_problems(body: dict[str, Any]) -> list[str]:
    """What the Messages API would reject: missing fields, unpaired tool_use / tool_result blocks."""
    problems = [f"{name}: Field required" for name in ("model", "max_tokens", "messages") if name not in body]
    messages = body.get("messages") or []
    if messages and messages[0].get("role") != "user":
        problems.append("messages: the first message must use the user role")
    pending: set[str] = set()
    for position, message in enumerate(messages):
        blocks = message.get("content")
        blocks = blocks if isinstance(blocks, list) else [{"type": "text", "text": blocks}]
        if message.get("role") == "assistant":
            if pending:
                problems.append(
                    f"messages.{position}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {sorted(pending)}"
                )
            pending = {block["id"] for block in blocks if block.get("type") == "tool_use"}
            continue
        answered = [block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"]
        for tool_use_id in answered:
            if tool_use_id not in pending:
                problems.append(
                    f"messages.{position}: unexpected tool_use_id {tool_use_id} in tool_result "
                    "blocks: each tool_result must match a tool_use in the previous message"
                )
        if len(answered) != len(set(answered)):
            problems.append(f"messages.{position}: a tool_use_id was answered twice")
        if pending - set(answered):
            problems.append(
                f"messages.{position}: tool_use ids were found without tool_result blocks "
                f"immediately after: {sorted(pending - set(answered))}"
            )
        pending = set()
    if pending:
        problems.append(f"the last assistant message has unanswered tool_use ids {sorted(pending)}")
    return problems


class AnthropicCache:
    """Prompt caching by breakpoint: the prefix ending at each ``cache_control`` block is written, and
    read back when a later request carries the same prefix up to one of its own breakpoints."""

    def __init__(self) -> None:
        self.written: set[str] = set()

    def usage(self, body: dict[str, Any]) -> dict[str, Any]:
        segments = [*(body.get("tools") or []), *_system_blocks(body.get("system"))]
        for message in body.get("messages") or []:
            content = message.get("content")
            segments.extend(content if isinstance(content, list) else [{"type": "text", "text": content}])
        digest = hashlib.sha256()
        chars = 0
        breakpoints: list[tuple[str, int]] = []  # (prefix digest, prefix characters) at each breakpoint
        hour_chars = 0  # characters up to the last one-hour breakpoint
        for segment in segments:
            marked = isinstance(segment, dict) and "cache_control" in segment
            # Where the breakpoints sit is not part of the cached content: a prefix written at one
            # request's last breakpoint is found again when the next request moves its breakpoints on.
            text = json.dumps(
                {key: value for key, value in segment.items() if key != "cache_control"} if marked else segment
            )
            chars += len(text)
            digest.update(text.encode())
            if marked:
                breakpoints.append((digest.hexdigest(), chars))
                if segment["cache_control"].get("ttl") == "1h":
                    hour_chars = chars
        total = max(1, chars // CHARS_PER_TOKEN)
        read = max((size for key, size in breakpoints if key in self.written), default=0) // CHARS_PER_TOKEN
        end = breakpoints[-1][1] // CHARS_PER_TOKEN if breakpoints else 0
        write = max(end - read, 0) if breakpoints and breakpoints[-1][0] not in self.written else 0
        self.written.update(key for key, _ in breakpoints)
        hour_write = min(max(hour_chars // CHARS_PER_TOKEN - read, 0), write)
        return {
            "input_tokens": max(total - read - write, 0),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_1h_input_tokens": hour_write,
                "ephemeral_5m_input_tokens": write - hour_write,
            },
        }


def _system_blocks(system: Any) -> list[dict[str, Any]]:
    if isinstance(system, list):
        return system
    return [{"type": "text", "text": system}] if system else []
