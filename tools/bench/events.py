"""Accounting for the events of one streamed completion: which carry generated text, when they
arrived, and the token usage the server reports at the end.

Most events are one token of text; decoding each as JSON would be most of the client's CPU. So an
event is first judged on its bytes: a ``"content"``, ``"reasoning_content"`` or ``"text"`` key whose
value is a non-empty string means generated text. Only events that may hold usage or an error (and
every event when the text itself is wanted) are decoded. Servers send usage in a closing chunk
without text (``stream_options.include_usage``), so text-bearing events are never decoded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tools.bench.wire import data_payloads

ERROR_BODY_CAP = 500
TEXT_KEYS = (b'"content":', b'"reasoning_content":', b'"text":')
# SGLang writes "usage":null into every chunk: only a usage object (or an error) is decoded.


@dataclass
class StreamOutcome:
    """What one streamed request produced, with client-side timestamps (``time.perf_counter``)."""

    ok: bool = False
    error: str | None = None
    status: int = 0
    started: float = 0.0
    first_token: float | None = None
    finished: float = 0.0
    chunk_gaps: list[float] = field(default_factory=list)  # seconds between content-bearing events
    content_events: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    text_parts: list[str] | None = None

    @property
    def text(self) -> str:
        return "".join(self.text_parts or [])


def carries_text(payload: bytes) -> bool:
    """Whether an event's generated text is a non-empty string, judged on the raw JSON bytes."""
    for key in TEXT_KEYS:
        position = payload.find(key)
        if position >= 0:
            position += len(key)
            if payload[position : position + 1] == b" ":
                position += 1
            if payload[position : position + 1] == b'"' and payload[position + 1 : position + 2] != b'"':
                return True
    return False


def count_text_events(complete: bytes) -> int:
    """How many events in ``complete`` carry non-empty text: a few C-speed substring counts, no loop."""
    compact = complete.count(b'"content":"')
    if compact and b'"content":""' not in complete and b'_content"' not in complete and b'"text":' not in complete:
        return compact  # the usual chat event, compact JSON (SGLang, vLLM)
    total = 0
    for key in TEXT_KEYS:
        if key in complete:
            total += complete.count(key + b'"') + complete.count(key + b' "')
            total -= complete.count(key + b'""') + complete.count(key + b' ""')
    return total


class EventSink:
    """Receives the body of a 200 streaming response and fills a :class:`StreamOutcome`.

    All events of one read share its timestamp, so the common case (a read of text events only) is
    accounted in bulk; events that may hold usage or an error, and every event when the text is
    wanted, are decoded one by one.
    """

    def __init__(self, outcome: StreamOutcome) -> None:
        self.outcome = outcome
        self.pending = b""
        self.decode_all = outcome.text_parts is not None
        self.last = 0.0

    def feed(self, body: bytes, now: float) -> None:
        # The common read is one whole event: it is cut, checked and counted here without further calls.
        buffer = self.pending + body if self.pending else body
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self.pending = buffer
            return
        complete, self.pending = buffer[:end], buffer[end + 2 :]
        if (
            not self.decode_all
            and b'"usage":{' not in complete
            and b'"usage": {' not in complete
            and b'"error"' not in complete
        ):
            self._count(now, count_text_events(complete))
            return
        for payload in data_payloads(complete):
            if self.decode_all or not carries_text(payload):
                if payload != b"[DONE]":
                    self._decode(payload, now)
            else:
                self._count(now, 1)

    def _count(self, now: float, events: int) -> None:
        if events <= 0:
            return
        outcome = self.outcome
        if outcome.first_token is None:
            outcome.first_token = now
        else:
            outcome.chunk_gaps.append(now - self.last)
        if events > 1:
            outcome.chunk_gaps.extend([0.0] * (events - 1))  # arrived in the same read as the first
        self.last = now
        outcome.content_events += events

    def _decode(self, payload: bytes, now: float) -> None:
        try:
            event = json.loads(payload)
        except ValueError:
            self.outcome.error = f"stream event is not JSON: {payload[:200]!r}"
            return
        if not isinstance(event, dict):
            return
        if event.get("error"):
            self.outcome.error = f"server error in stream: {str(event['error'])[:ERROR_BODY_CAP]}"
        choices = event.get("choices")
        if choices and isinstance(choices[0], dict):
            choice = choices[0]
            delta = choice.get("delta")
            text = (delta.get("content") or delta.get("reasoning_content")) if delta else choice.get("text")
            if text:
                self._count(now, 1)
                if self.outcome.text_parts is not None:
                    self.outcome.text_parts.append(text)
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.outcome.prompt_tokens = usage.get("prompt_tokens")
            self.outcome.completion_tokens = usage.get("completion_tokens")
