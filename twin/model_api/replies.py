"""What the scripted server answers on each wire: the checks it runs on a request, and the body or the
server-sent events of a scripted turn (thinking blocks and reasoning items are issued through the
server's ledger, so that their return can be checked)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from twin.model_api import chat, responses, rules, wire
from twin.model_api.script import Api, ModelTurn, ToolUse

if TYPE_CHECKING:
    from twin.model_api.server import ModelServer

CONTEXT_MESSAGES: dict[str, str] = {
    "anthropic": "prompt is too long: {tokens} tokens > {limit} maximum",
    "openai": (
        "This model's maximum context length is {limit} tokens. However, your messages resulted in "
        "{tokens} tokens. Please reduce the length of the messages."
    ),
    "responses": "Your input exceeds the context window of this model ({tokens} tokens > {limit}).",
}


def problems(server: ModelServer, api: Api, body: dict[str, Any]) -> list[str]:
    """Everything the real service would refuse in this request."""
    if api == "anthropic":
        found = wire.anthropic_problems(body) + rules.anthropic_id_problems(body)
        found += server.ledger.thinking_problems(body)
    elif api == "openai":
        found = chat.openai_problems(body) + rules.chat_model_problems(body, server.reasoning_field)
    else:
        found = rules.responses_problems(body, server.ledger)
    return found


def prompt_tokens(api: Api, body: dict[str, Any]) -> int:
    parts = (
        [body.get("tools"), body.get("input"), body.get("instructions")]
        if api == "responses"
        else [body.get("tools"), body.get("system"), body.get("messages")]
    )
    return wire.tokens(json.dumps(parts))


def context_message(api: Api, tokens: int, limit: int) -> str:
    return CONTEXT_MESSAGES[api].format(tokens=tokens, limit=limit)


def _with_ids(turn: ModelTurn, api: Api) -> ModelTurn:
    calls = [ToolUse(tool.name, tool.arguments, wire.call_id(api, tool)) for tool in turn.tool_calls]
    return replace(turn, tool_calls=calls)


class Reply:
    """One scripted turn rendered for one request."""

    def __init__(self, server: ModelServer, api: Api, body: dict[str, Any], turn: ModelTurn) -> None:
        self.server, self.api, self.body = server, api, body
        self.turn = _with_ids(turn, api)
        self.signature = ""
        ids = [str(tool.id) for tool in self.turn.tool_calls]
        if self.turn.thinking is not None and api == "anthropic":
            self.signature = server.ledger.issue(body, self.turn.thinking, ids)
        self.reasoning_id, self.encrypted = "", ""
        if self.turn.thinking is not None and api == "responses":
            self.encrypted = f"enc-{uuid.uuid4().hex}"
            self.reasoning_id = server.ledger.issue(body, self.encrypted, ids, prefix="rs")
            server.ledger.issued[self.reasoning_id].text = self.encrypted

    def body_json(self) -> dict[str, Any]:
        prompt, cached, usage = self.server.usage_for(self.api, self.body)
        model = self.server.model
        if self.api == "anthropic":
            return wire.anthropic_message(self.turn, model, usage, self.signature)
        if self.api == "openai":
            return chat.openai_completion(
                self.turn, model, prompt, cached, self.server.reasoning_field or "reasoning_content"
            )
        included = "reasoning.encrypted_content" in (self.body.get("include") or [])
        items = responses.output_items(self.turn, self.reasoning_id, self.encrypted if included else None)
        return responses.response_body(self.turn, model, items, prompt, cached)

    def events(self) -> list[bytes]:
        if self.api == "anthropic":
            prompt, cached, usage = self.server.usage_for(self.api, self.body)
            return [
                f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                for name, payload in wire.anthropic_events(self.turn, self.server.model, usage, self.signature)
            ]
        if self.api == "responses":
            return [
                f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                for event in responses.response_events(self.body_json())
            ]
        prompt, cached, _ = self.server.usage_for(self.api, self.body)
        include_usage = bool((self.body.get("stream_options") or {}).get("include_usage"))
        chunks = chat.openai_chunks(
            self.turn,
            self.server.model,
            prompt,
            cached,
            include_usage,
            self.server.reasoning_field or "reasoning_content",
        )
        return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]
