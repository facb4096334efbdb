"""The rules today's hosted models enforce, checked by the scripted server so the suite fails where a real
provider would refuse the request.

- Anthropic: tool_use ids match ``^[a-zA-Z0-9_-]+$``; a returned thinking block must carry a signature the
  server issued for exactly that text, come first in its message, and (on models with preserved thinking)
  follow exactly the prefix it was produced under (system, tools and earlier messages, cache markers
  aside); within the current tool loop no thinking block may be left out once a later one comes back
  (dropping the thinking of the oldest turns, as after a compaction, is allowed; a gap is not).
- Chat Completions: OpenAI's GPT-5.4-and-later models refuse function tools unless the reasoning effort is
  ``none``; reasoning models refuse ``max_tokens`` and a non-default ``temperature``; a server in thinking
  mode (DeepSeek, Kimi, SGLang/vLLM with a reasoning parser) refuses an assistant tool-call message
  without its reasoning field.
- Responses: every function_call is answered by a function_call_output with its call_id and every output
  answers a call; a reasoning item must be one the server issued, with its encrypted content unchanged,
  followed by the item it came with.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
RESPONSES_FOR_TOOLS = re.compile(r"^(gpt-5\.([4-9]|\d\d)|gpt-[6-9]|gpt-5(\.\d+)?-(pro|codex))")
REASONING_MODEL = re.compile(r"^(o\d|gpt-[5-9])")
PRESERVED_THINKING = re.compile(r"^claude-((fable|mythos)-5-([1-9]|\d\d)|(opus|sonnet|haiku)-5-([5-9]|\d\d))")
TOOLS_NEED_RESPONSES = (
    "Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. "
    "To use function tools, use /v1/responses or set reasoning_effort to 'none'."
)


def _without_cache_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_cache_markers(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_markers(item) for item in value]
    return value


def prefix_digest(body: dict[str, Any], message_count: int) -> str:
    """The digest of what precedes message ``message_count``: system, tools and the earlier messages."""
    prefix = {
        "system": body.get("system"),
        "tools": body.get("tools"),
        "messages": (body.get("messages") or [])[:message_count],
    }
    return hashlib.sha256(json.dumps(_without_cache_markers(prefix), sort_keys=True).encode()).hexdigest()


@dataclass
class Issued:
    text: str
    prefix: str
    call_ids: list[str] = field(default_factory=list)


class ThinkingLedger:
    """Every thinking block (or reasoning item) the server handed out, by signature (or item id)."""

    def __init__(self) -> None:
        self.issued: dict[str, Issued] = {}

    def issue(self, body: dict[str, Any], text: str, call_ids: list[str], prefix: str = "sig") -> str:
        key = f"{prefix}-{uuid.uuid4().hex}"
        self.issued[key] = Issued(
            text=text, prefix=prefix_digest(body, len(body.get("messages") or [])), call_ids=call_ids
        )
        return key

    def thinking_problems(self, body: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        messages = body.get("messages") or []
        preserved = bool(PRESERVED_THINKING.match(str(body.get("model", ""))))
        loop_start = _tool_loop_start(messages)
        returned_in_loop: list[bool] = []
        for position, message in enumerate(messages):
            blocks = message.get("content") if isinstance(message.get("content"), list) else []
            if message.get("role") != "assistant":
                continue
            tool_ids = [block.get("id") for block in blocks if block.get("type") == "tool_use"]
            had = [key for key, entry in self.issued.items() if entry.call_ids and entry.call_ids == tool_ids]
            seen_other = False
            for index, block in enumerate(blocks):
                if block.get("type") not in ("thinking", "redacted_thinking"):
                    seen_other = True
                    continue
                where = f"messages.{position}.content.{index}"
                key = block.get("signature") if block["type"] == "thinking" else block.get("data")
                entry = self.issued.get(str(key))
                if seen_other:
                    problems.append(f"{where}: thinking blocks must come before the other blocks of a message")
                elif entry is None or (block["type"] == "thinking" and entry.text != block.get("thinking")):
                    problems.append(f"{where}: Invalid `signature` in `thinking` block")
                elif preserved and entry.prefix != prefix_digest(body, position):
                    problems.append(
                        f"{where}: Invalid `signature` in `thinking` block. The block is bound to a "
                        "different conversation. Remove the block, or set `thinking.block_binding."
                        'prefix_mismatch_behavior` to "drop_block".'
                    )
            if position >= loop_start and had:
                returned_in_loop.append(any(block.get("type") in ("thinking", "redacted_thinking") for block in blocks))
        first = returned_in_loop.index(True) if True in returned_in_loop else len(returned_in_loop)
        if not all(returned_in_loop[first:]):
            problems.append(
                "messages: a thinking block of the current tool loop was left out after an earlier "
                "one was sent back; send the thinking of the loop back unchanged"
            )
        return problems


def _tool_loop_start(messages: list[dict[str, Any]]) -> int:
    """Index after the last user message that answers no tool call (where the current tool loop starts)."""
    start = 0
    for position, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user" and not any(block.get("type") == "tool_result" for block in blocks):
            start = position + 1
    return start


def anthropic_id_problems(body: dict[str, Any]) -> list[str]:
    problems = []
    for position, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for index, block in enumerate(content if isinstance(content, list) else []):
            value = block.get("id") if block.get("type") == "tool_use" else block.get("tool_use_id")
            if block.get("type") in ("tool_use", "tool_result") and not TOOL_USE_ID.match(str(value)):
                problems.append(
                    f"messages.{position}.content.{index}: String should match pattern "
                    f"'^[a-zA-Z0-9_-]+$' (got {value!r})"
                )
    return problems


def chat_model_problems(body: dict[str, Any], reasoning_field: str | None) -> list[str]:
    model = str(body.get("model", ""))
    effort = body.get("reasoning_effort")
    problems: list[str] = []
    reasoning = REASONING_MODEL.match(model) and "-chat" not in model
    if RESPONSES_FOR_TOOLS.match(model) and body.get("tools") and effort != "none":
        problems.append(TOOLS_NEED_RESPONSES.format(model=model))
    if reasoning and "max_tokens" in body:
        problems.append(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        )
    if reasoning and "temperature" in body and effort != "none":
        problems.append("Unsupported value: 'temperature' does not support this value with this model.")
    if reasoning_field is not None:
        for position, message in enumerate(body.get("messages") or []):
            if (
                message.get("role") == "assistant"
                and message.get("tool_calls")
                and not any(name in message for name in ("reasoning_content", "reasoning"))
            ):
                problems.append(
                    f"Missing `reasoning_content` field in the assistant message at message index "
                    f"{position}. The reasoning_content in the thinking mode must be passed back."
                )
    return problems


def responses_problems(body: dict[str, Any], ledger: ThinkingLedger) -> list[str]:
    problems = [f"Missing required parameter: '{name}'." for name in ("model", "input") if name not in body]
    raw = body.get("input")
    items: list[dict[str, Any]] = raw if isinstance(raw, list) else []
    pending: set[str] = set()
    model = str(body.get("model", ""))
    if REASONING_MODEL.match(model) and "temperature" in body and (body.get("reasoning") or {}).get("effort") != "none":
        problems.append("Unsupported parameter: 'temperature' is not supported with this model.")
    for position, item in enumerate(items):
        kind = item.get("type", "message")
        call = str(item.get("call_id"))
        if kind == "function_call":
            pending.add(call)
        elif kind == "function_call_output":
            if call not in pending:
                problems.append(f"input[{position}]: No tool call found for function call output with call_id {call}.")
            pending.discard(call)
        elif kind == "reasoning":
            problems += _reasoning_item_problems(position, item, items, ledger, body)
        elif pending:
            problems.append(f"No tool output found for function call {sorted(pending)[0]}.")
            pending = set()
    if pending:
        problems.append(f"No tool output found for function call {sorted(pending)[0]}.")
    return problems


def _reasoning_item_problems(
    position: int, item: dict[str, Any], items: list[dict[str, Any]], ledger: ThinkingLedger, body: dict[str, Any]
) -> list[str]:
    entry = ledger.issued.get(str(item.get("id")))
    if not item.get("encrypted_content") and body.get("store") is False:
        return [
            f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is set to "
            "false. Try again with `store` set to true, or pass the item's encrypted content."
        ]
    if entry is None or item.get("encrypted_content") != entry.text:
        return [f"input[{position}]: The encrypted content for item {item.get('id')} could not be verified."]
    following = items[position + 1] if position + 1 < len(items) else {}
    if following.get("type", "message") not in ("function_call", "message", "reasoning"):
        return [f"Item '{item.get('id')}' of type 'reasoning' was provided without its required following item."]
    return []
