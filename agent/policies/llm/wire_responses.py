"""The OpenAI Responses wire format, used statelessly (``store=false``).

Pure data conversion, no network. Each assistant turn becomes its reasoning items (replayed unchanged:
id, summary and ``encrypted_content``, as ``include=["reasoning.encrypted_content"]`` returns them), an
assistant message with its text, and one ``function_call`` item per call; each result becomes a
``function_call_output`` item paired by ``call_id``; notes and the state document travel as a user
message. Replies are read from a complete ``Response`` or from the stream's ``response.completed`` /
``response.incomplete`` event, whose ``output`` holds the finished items.
"""

from __future__ import annotations

from typing import Any

from agent.policies.llm.pricing import TokenCounts
from agent.policies.llm.reply import IncompleteResponse, ModelReply, ModelRequest
from agent.policies.llm.turns import AssistantTurn, ReasoningRecord, ToolCallRecord, UserTurn
from agent.policies.llm.wire_openai import ERROR_PREFIX, parse_arguments, wrapped_arguments

INCLUDE = ["reasoning.encrypted_content"]
FINAL_EVENTS = ("response.completed", "response.incomplete")


def request_parameters(request: ModelRequest) -> dict[str, Any]:
    """``instructions``, ``input`` and ``tools`` for ``responses.create``."""
    tools = [
        {
            "type": "function",
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool.get("input_schema", {"type": "object"}),
            "strict": False,
        }
        for tool in request.tools
    ]
    items: list[dict[str, Any]] = []
    for turn in request.turns:
        items.extend(_items(turn))
    return {"instructions": request.system, "input": items, "tools": tools}


def _items(turn: AssistantTurn | UserTurn) -> list[dict[str, Any]]:
    if isinstance(turn, AssistantTurn):
        items: list[dict[str, Any]] = [
            {
                "type": "reasoning",
                "id": record.item_id,
                "encrypted_content": record.signature,
                "summary": [{"type": "summary_text", "text": text} for text in record.summary],
            }
            for record in turn.reasoning
            if record.kind == "reasoning_item"
        ]
        if turn.text or not turn.calls:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": turn.text or "(no reply)"}],
                }
            )
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": wrapped_arguments(call.arguments),
            }
            for call in turn.calls
        )
        return items
    items = [
        {
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": (ERROR_PREFIX if result.is_error else "") + (result.content or "(empty)"),
        }
        for result in turn.results
    ]
    if turn.texts() or not items:
        items.append(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "\n\n".join(turn.texts()) or "Continue."}],
            }
        )
    return items


def tokens_from(usage: Any) -> TokenCounts:
    if usage is None:
        return TokenCounts()
    details = getattr(usage, "input_tokens_details", None)
    return TokenCounts(
        input_tokens=int(usage.input_tokens or 0),
        output_tokens=int(usage.output_tokens or 0),
        cache_read_tokens=int(getattr(details, "cached_tokens", 0) or 0),
        cache_write_tokens=int(getattr(details, "cache_write_tokens", 0) or 0),
    )


def _reasoning(item: Any) -> ReasoningRecord:
    summary = [str(getattr(part, "text", "")) for part in getattr(item, "summary", None) or []]
    content = "\n".join(str(getattr(part, "text", "")) for part in getattr(item, "content", None) or [])
    return ReasoningRecord(
        kind="reasoning_item",
        item_id=item.id,
        summary=summary,
        text=content,
        signature=getattr(item, "encrypted_content", None) or "",
    )


def reply_from_response(response: Any) -> ModelReply:
    """A reply from a finished ``Response`` (any SDK release: items are read by their ``type``)."""
    text: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCallRecord] = []
    reasoning: list[ReasoningRecord] = []
    for item in getattr(response, "output", None) or []:
        kind = getattr(item, "type", "")
        if kind == "reasoning":
            reasoning.append(_reasoning(item))
        elif kind == "function_call":
            calls.append(ToolCallRecord(id=item.call_id, name=item.name, arguments=parse_arguments(item.arguments)))
        elif kind == "message":
            for part in item.content or []:
                if getattr(part, "type", "") == "refusal":
                    refusals.append(part.refusal)
                elif getattr(part, "type", "") == "output_text":
                    text.append(part.text)
    return ModelReply(
        text="".join(text) or "\n".join(refusals),
        calls=calls,
        reasoning=reasoning,
        stop_reason=_stop_reason(response, calls, refusals),
        refusal_category="refusal" if refusals and not calls else _incomplete(response),
        refusal_explanation="\n".join(refusals),
        tokens=tokens_from(getattr(response, "usage", None)),
        model=getattr(response, "model", "") or "",
    )


def _incomplete(response: Any) -> str:
    reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
    return "content_filter" if reason == "content_filter" else ""


def _stop_reason(response: Any, calls: list[ToolCallRecord], refusals: list[str]) -> str:
    status = getattr(response, "status", None) or "completed"
    if status == "incomplete":
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None) or "incomplete"
        return "length" if reason == "max_output_tokens" else str(reason)
    if status not in ("completed",):
        raise IncompleteResponse(f"the response ended with status {status}")
    if refusals and not calls:
        return "refusal"
    return "tool_calls" if calls else "stop"


class StreamAccumulator:
    """Keeps the final ``response.completed`` / ``response.incomplete`` event; errors end the stream."""

    def __init__(self) -> None:
        self.response: Any = None

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind in FINAL_EVENTS:
            self.response = event.response
        elif kind in ("response.failed", "error"):
            message = getattr(getattr(getattr(event, "response", None), "error", None), "message", None)
            raise IncompleteResponse(f"the stream reported {kind}: {message or getattr(event, 'message', '')}")

    def reply(self) -> ModelReply:
        if self.response is None:
            raise IncompleteResponse("the stream ended before response.completed")
        return reply_from_response(self.response)
