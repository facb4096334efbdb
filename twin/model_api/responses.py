"""The OpenAI Responses wire as the scripted server writes it: a ``response`` object, or its stream
(response.created, response.in_progress, per item response.output_item.added / output_text.delta /
function_call_arguments.delta / output_item.done, then response.completed or response.incomplete).

A thinking turn becomes a reasoning item with a summary and an opaque ``encrypted_content`` the server
remembers (``model_rules.ThinkingLedger``); it is returned only when the request asked for it with
``include=["reasoning.encrypted_content"]``, as the real service does for ``store=false``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from twin.model_api.script import ModelTurn
from twin.model_api.wire import call_id, output_tokens, pieces


def _usage(prompt: int, cached: int, turn: ModelTurn) -> dict[str, Any]:
    completion = output_tokens(turn)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def output_items(turn: ModelTurn, reasoning_id: str, encrypted: str | None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.thinking is not None:
        items.append(
            {
                "type": "reasoning",
                "id": reasoning_id,
                "status": "completed",
                "encrypted_content": encrypted,
                "summary": [{"type": "summary_text", "text": turn.thinking}],
            }
        )
    if turn.stop_reason == "refusal":
        items.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "refusal", "refusal": turn.text}],
            }
        )
    elif turn.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for tool in turn.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:24]}",
                "status": "completed",
                "call_id": call_id("openai", tool),
                "name": tool.name,
                "arguments": tool.arguments_text(),
            }
        )
    return items


def response_body(turn: ModelTurn, model: str, items: list[dict[str, Any]], prompt: int, cached: int) -> dict[str, Any]:
    incomplete = turn.stop_reason in ("length", "max_output_tokens", "content_filter")
    reason = "content_filter" if turn.stop_reason == "content_filter" else "max_output_tokens"
    return {
        "id": f"resp_{uuid.uuid4().hex[:24]}",
        "object": "response",
        "created_at": time.time(),
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": reason} if incomplete else None,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": _usage(prompt, cached, turn),
    }


def response_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of one finished response body."""
    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(body["output"]):
        empty = {**item, "status": "in_progress"}
        if item["type"] == "message":
            empty["content"] = []
        events.append({"type": "response.output_item.added", "output_index": index, "item": empty})
        if item["type"] == "function_call":
            events.extend(
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "item_id": item["id"],
                    "delta": piece,
                }
                for piece in pieces(item["arguments"])
            )
        elif item["type"] == "message" and item["content"][0]["type"] == "output_text":
            events.extend(
                {
                    "type": "response.output_text.delta",
                    "output_index": index,
                    "item_id": item["id"],
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
                for piece in pieces(item["content"][0]["text"])
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
    events.append({"type": final, "response": body})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def responses_error(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
