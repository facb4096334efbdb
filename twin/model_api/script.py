"""What the scripted model server plays (turns and faults) and what it records (requests).

A script is a sequence of :class:`ModelTurn` (a reply: text and tool calls) and :class:`Fault` (an HTTP
error, a hang, a stream cut mid-message). Both wire formats are produced from the same script, so a test
can run the same story against the Anthropic and the OpenAI clients.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["anthropic", "openai", "responses"]
FaultKind = Literal["status", "delay", "cut_stream", "stall_stream", "stream_error", "context_exceeded"]


@dataclass
class ToolUse:
    """One tool call in a scripted turn. ``arguments`` given as text is sent verbatim (so it may be
    malformed JSON); ``id`` defaults to a fresh id in the API's style."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class ModelTurn:
    """One model reply. Token counts default to estimates from the request and the reply."""

    text: str = ""
    tool_calls: list[ToolUse] = field(default_factory=list)
    # Reasoning sent before the reply: an Anthropic thinking block (with a signature), an OpenAI Responses
    # reasoning item (summary and encrypted content), or ``reasoning_content`` as SGLang, vLLM (in the
    # server's ``reasoning_field``), DeepSeek and Kimi produce it.
    thinking: str | None = None
    # Default: tool_use (Anthropic) / tool_calls (OpenAI) when there are calls, else end_turn / stop.
    # "refusal" with ``refusal_category`` plays a declined request; "model_context_window_exceeded"
    # (Anthropic) a conversation that outgrew the window.
    stop_reason: str | None = None
    refusal_category: str | None = None
    output_tokens: int | None = None


@dataclass
class Fault:
    """A failure to inject instead of (or in the middle of) a reply.

    - ``status``: answer with HTTP ``status`` (and ``retry-after`` / ``retry-after-ms`` when given);
    - ``delay``: wait ``seconds`` before answering with ``turn`` (longer than the client's timeout: a hang);
    - ``cut_stream``: stream ``after_events`` events of ``turn``, then drop the connection (``clean``: end
      the body properly instead, so only the missing final event shows the cut);
    - ``stall_stream``: stream ``after_events`` events, then go silent for ``seconds``;
    - ``stream_error``: stream ``after_events`` events, then an error event (Anthropic: overloaded_error).
    A non-streaming request hit by a stream fault gets a truncated body (or the stall) instead.
    """

    kind: FaultKind
    status: int = 500
    retry_after: float | None = None
    retry_after_ms: float | None = None
    seconds: float = 0.0
    after_events: int = 2
    clean: bool = False
    turn: ModelTurn | None = None
    message: str = ""

    @classmethod
    def http(
        cls, status: int, *, retry_after: float | None = None, retry_after_ms: float | None = None, message: str = ""
    ) -> Fault:
        return cls(
            kind="status", status=status, retry_after=retry_after, retry_after_ms=retry_after_ms, message=message
        )

    @classmethod
    def rate_limited(cls, retry_after: float | None = None, retry_after_ms: float | None = None) -> Fault:
        return cls.http(429, retry_after=retry_after, retry_after_ms=retry_after_ms)

    @classmethod
    def overloaded(cls) -> Fault:
        return cls.http(529)

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        return cls(kind="delay", seconds=seconds)

    @classmethod
    def cut_stream(cls, after_events: int = 3, *, clean: bool = False, turn: ModelTurn | None = None) -> Fault:
        return cls(kind="cut_stream", after_events=after_events, clean=clean, turn=turn)

    @classmethod
    def stall_stream(cls, seconds: float, after_events: int = 2) -> Fault:
        return cls(kind="stall_stream", seconds=seconds, after_events=after_events)

    @classmethod
    def stream_error(cls, after_events: int = 2) -> Fault:
        return cls(kind="stream_error", after_events=after_events)

    @classmethod
    def context_exceeded(cls) -> Fault:
        """HTTP 400 saying the prompt does not fit the context window, in each API's words."""
        return cls(kind="context_exceeded", status=400)

    def partial_turn(self) -> ModelTurn:
        return self.turn or ModelTurn(
            text="Let me look at the log first.", tool_calls=[ToolUse("tail_log", {"name": "engine", "lines": 50})]
        )


Step = ModelTurn | Fault


@dataclass
class ResultSeen:
    """A tool result as the server received it, the same for both APIs."""

    call_id: str
    content: str
    is_error: bool


@dataclass
class RecordedRequest:
    """One HTTP request the server received, with what it answered."""

    index: int
    api: Api
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw_size: int
    answer: str = ""  # "turn", "fault:<kind>", "rejected: <why>" or "exhausted"

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Messages (Anthropic, Chat Completions) or input items (Responses) of the request."""
        messages = self.body.get("input" if self.api == "responses" else "messages")
        return messages if isinstance(messages, list) else []

    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") or []
        return [tool["function"]["name"] if self.api == "openai" else tool["name"] for tool in tools]

    def tool_call_ids(self) -> list[str]:
        """Ids of every tool call the assistant messages of this request contain, in order."""
        ids: list[str] = []
        for message in self.messages:
            if self.api == "responses" and message.get("type") == "function_call":
                ids.append(message["call_id"])
            elif message.get("role") == "assistant" and self.api == "openai":
                ids.extend(call["id"] for call in message.get("tool_calls") or [])
            elif message.get("role") == "assistant" and self.api == "anthropic":
                ids.extend(block["id"] for block in _blocks(message) if block.get("type") == "tool_use")
        return ids

    def tool_results(self) -> list[ResultSeen]:
        results: list[ResultSeen] = []
        for message in self.messages:
            if self.api == "responses" and message.get("type") == "function_call_output":
                content = str(message.get("output", ""))
                results.append(ResultSeen(message["call_id"], content, content.startswith("ERROR")))
            elif self.api == "openai" and message.get("role") == "tool":
                content = str(message.get("content", ""))
                results.append(ResultSeen(message["tool_call_id"], content, content.startswith("ERROR")))
            elif self.api == "anthropic" and message.get("role") == "user":
                results.extend(
                    ResultSeen(block["tool_use_id"], _text_of(block.get("content")), bool(block.get("is_error")))
                    for block in _blocks(message)
                    if block.get("type") == "tool_result"
                )
        return results

    def last_user_text(self) -> str:
        """All text of the last user message (OpenAI: the last ``role=user`` message)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _text_of(message.get("content"))
        return ""

    def user_texts(self) -> list[str]:
        """The text of every user message, in order."""
        return [_text_of(message.get("content")) for message in self.messages if message.get("role") == "user"]

    def all_text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content or ""}]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(block.get("text", block.get("content", ""))) for block in content if isinstance(block, dict)
        )
    return ""
