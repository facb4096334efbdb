"""A lean HTTP/1.1 client for streaming completions: one keep-alive connection per in-flight request.

The connection is an :class:`asyncio.Protocol`: bytes are parsed inside ``data_received``, straight
from the event loop, so a streamed token costs no coroutine switch, no stream-reader copy and one
JSON decode. Each network read is stamped once; every event in that read shares the stamp, which is
when the client saw it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tools.bench.wire import ResponseParser, SseSplitter, WireError

ERROR_BODY_CAP = 500


@dataclass(frozen=True)
class Endpoint:
    """Where the server listens, parsed from a base URL such as ``http://127.0.0.1:30000``."""

    host: str
    port: int
    tls: bool = False
    prefix: str = ""

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        parts = urlsplit(base_url if "://" in base_url else f"http://{base_url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base URL must look like http://host:port, got {base_url!r}")
        tls = parts.scheme == "https"
        return cls(host=parts.hostname, port=parts.port or (443 if tls else 80), tls=tls,
                   prefix=parts.path.rstrip("/"))

    def request_bytes(self, method: str, path: str, body: bytes = b"",
                      headers: dict[str, str] | None = None) -> bytes:
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Connection: keep-alive", "Accept: */*"]
        if body or method == "POST":
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


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


class _Exchange:
    """Per-request parsing state: the HTTP response plus, for 200 responses, the SSE events."""

    def __init__(self, outcome: StreamOutcome, future: asyncio.Future[None], streaming: bool) -> None:
        self.outcome, self.future, self.streaming = outcome, future, streaming
        self.parser = ResponseParser(self._on_body)
        self.splitter = SseSplitter()
        self.raw_body: list[bytes] = []
        self.now = 0.0
        self.last = 0.0

    def _on_body(self, piece: bytes) -> None:
        if not self.streaming or self.parser.status != 200:
            self.raw_body.append(piece)
            return
        for payload in self.splitter.feed(piece):
            if payload != b"[DONE]":
                self._on_event(payload)

    def _on_event(self, payload: bytes) -> None:
        try:
            event = json.loads(payload)
        except ValueError:
            self.outcome.error = f"stream event is not JSON: {payload[:200]!r}"
            return
        if not isinstance(event, dict):
            return
        if "error" in event:
            self.outcome.error = f"server error in stream: {str(event['error'])[:ERROR_BODY_CAP]}"
        choices = event.get("choices")
        if choices:
            choice = choices[0]
            delta = choice.get("delta")
            text = (delta.get("content") or delta.get("reasoning_content")) if delta else choice.get("text")
            if text:
                outcome = self.outcome
                if outcome.first_token is None:
                    outcome.first_token = self.now
                else:
                    outcome.chunk_gaps.append(self.now - self.last)
                self.last = self.now
                outcome.content_events += 1
                if outcome.text_parts is not None:
                    outcome.text_parts.append(text)
        usage = event.get("usage")
        if usage:
            self.outcome.prompt_tokens = usage.get("prompt_tokens")
            self.outcome.completion_tokens = usage.get("completion_tokens")


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None:
            return
        exchange.now = time.perf_counter()
        try:
            exchange.parser.feed(data)
        except (WireError, ValueError) as error:
            self._finish(f"bad response: {error}")
            return
        if exchange.parser.complete:
            self._finish(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self.exchange
        if exchange is not None:
            try:
                exchange.parser.feed_eof()
                self._finish(None)
            except WireError as error:
                self._finish(f"{error}" + (f" ({exc})" if exc else ""))

    def _finish(self, error: str | None) -> None:
        exchange, self.exchange = self.exchange, None
        if exchange is None:
            return
        exchange.outcome.finished = time.perf_counter()
        if error is not None:
            exchange.outcome.error = error
        if not exchange.parser.keep_alive and self.transport is not None:
            self.transport.close()
        if not exchange.future.done():
            exchange.future.set_result(None)


class Connection:
    """One keep-alive connection; reopened transparently when the server closed it."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._protocol: _Protocol | None = None

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        context = ssl.create_default_context() if self.endpoint.tls else None
        _, protocol = await loop.create_connection(_Protocol, self.endpoint.host, self.endpoint.port,
                                                   ssl=context)
        self._protocol = protocol
        return protocol

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._protocol = None

    async def exchange(self, request: bytes, outcome: StreamOutcome, *, streaming: bool,
                       timeout: float) -> _Exchange:
        """Send ``request`` and wait for the whole response; fills ``outcome`` as bytes arrive."""
        protocol = self._protocol
        reused = protocol is not None and not protocol.closed
        if protocol is None or not reused:
            try:
                protocol = await asyncio.wait_for(self._open(), timeout)
            except (OSError, TimeoutError) as error:
                where = f"{self.endpoint.host}:{self.endpoint.port}"
                outcome.error = f"cannot connect to {where}: {error or 'timeout'}"
                outcome.finished = time.perf_counter()
                raise _NoResponse from None
        # No await between the liveness check above and the write below: a close seen in between
        # would otherwise leave the request written into a dead transport.
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        exchange = _Exchange(outcome, future, streaming)
        protocol.exchange = exchange
        outcome.started = time.perf_counter()
        assert protocol.transport is not None
        protocol.transport.write(request)
        if protocol.closed:
            protocol._finish("connection closed before the request was sent")
        deadline = loop.call_later(timeout, _expire, future)
        try:
            await future
        except TimeoutError:
            protocol.exchange = None
            self.close()
            outcome.error = f"no complete response within {timeout:.0f} s"
            outcome.finished = time.perf_counter()
            return exchange
        finally:
            deadline.cancel()
        if reused and exchange.parser.status == 0 and outcome.error is not None:
            # The server closed an idle keep-alive connection just as we reused it: retry once.
            self.close()
            outcome.error = None
            return await self.exchange(request, outcome, streaming=streaming, timeout=timeout)
        return exchange


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class _NoResponse(Exception):
    pass


async def stream(connection: Connection, request: bytes, *, timeout: float,
                 collect_text: bool = False) -> StreamOutcome:
    """Send one streaming completion request and measure it; never raises for server or network errors."""
    outcome = StreamOutcome(text_parts=[] if collect_text else None)
    try:
        exchange = await connection.exchange(request, outcome, streaming=True, timeout=timeout)
    except _NoResponse:
        return outcome
    outcome.status = exchange.parser.status
    if outcome.error is None and outcome.status != 200:
        body = b"".join(exchange.raw_body)[:ERROR_BODY_CAP].decode("utf-8", "replace")
        outcome.error = f"HTTP {outcome.status}: {body.strip() or exchange.parser.reason}"
    if outcome.error is None and outcome.first_token is None:
        outcome.error = "the stream ended without any generated text"
    outcome.ok = outcome.error is None
    return outcome


async def fetch(endpoint: Endpoint, path: str, *, timeout: float = 10.0,
                body: dict[str, Any] | None = None) -> tuple[int, bytes]:
    """A plain GET (or POST of a JSON body) on a fresh connection; returns (status, body)."""
    connection = Connection(endpoint)
    payload = json.dumps(body).encode() if body is not None else b""
    request = endpoint.request_bytes("POST" if body is not None else "GET", path, payload)
    outcome = StreamOutcome()
    try:
        exchange = await connection.exchange(request, outcome, streaming=False, timeout=timeout)
    except _NoResponse:
        raise ConnectionError(outcome.error) from None
    finally:
        connection.close()
    if outcome.error is not None:
        raise ConnectionError(f"GET {path}: {outcome.error}")
    return exchange.parser.status, b"".join(exchange.raw_body)


def build_encoder() -> Callable[[dict[str, Any]], bytes]:
    """A compact JSON encoder for request bodies."""
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    return lambda value: encoder.encode(value).encode("utf-8")
