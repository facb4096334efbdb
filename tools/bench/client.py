"""A lean HTTP/1.1 client for streaming completions: one keep-alive connection per in-flight request.

Bytes are parsed in the event loop's read callback (:mod:`tools.bench.links`), so a streamed token
costs no coroutine switch, no stream-reader copy and, in the common case, no JSON decode
(:mod:`tools.bench.events`). Each network read is stamped once; every event in that read shares
the stamp, which is when the client saw it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tools.bench.events import StreamOutcome
from tools.bench.links import Exchange, Link, SocketLink, TlsLink

__all__ = ["Connection", "Endpoint", "StreamOutcome", "build_encoder", "fetch", "stream"]


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
        return cls(host=parts.hostname, port=parts.port or (443 if tls else 80), tls=tls, prefix=parts.path.rstrip("/"))

    def request_bytes(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
        lines = [
            f"{method} {self.prefix}{path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Connection: keep-alive",
            "Accept: */*",
        ]
        if body or method == "POST":
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Connection:
    """One keep-alive connection; reopened transparently when the server closed it."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._link: Link | None = None

    async def _open(self) -> Link:
        opener = TlsLink.open if self.endpoint.tls else SocketLink.open
        self._link = await opener(self.endpoint.host, self.endpoint.port)
        return self._link

    def close(self) -> None:
        if self._link is not None:
            self._link.close()
        self._link = None

    async def exchange(self, request: bytes, outcome: StreamOutcome, *, streaming: bool, timeout: float) -> Exchange:
        """Send ``request`` and wait for the whole response; fills ``outcome`` as bytes arrive."""
        link = self._link
        reused = link is not None and not link.closed
        if link is None or not reused:
            try:
                link = await asyncio.wait_for(self._open(), timeout)
            except (OSError, TimeoutError) as error:
                where = f"{self.endpoint.host}:{self.endpoint.port}"
                outcome.error = f"cannot connect to {where}: {error or 'timeout'}"
                outcome.finished = time.perf_counter()
                raise _NoResponse from None
        # No await between the liveness check above and the write below: a close seen in between
        # would otherwise leave the request written into a dead connection.
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        exchange = Exchange(outcome, streaming)
        link.exchange, link.future = exchange, future
        outcome.started = time.perf_counter()
        link.write(request)
        if link.closed and link.exchange is exchange:
            link.finish("connection closed before the request was sent")
        deadline = loop.call_later(timeout, _expire, future)
        try:
            await future
        except TimeoutError:
            link.exchange = link.future = None
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


async def stream(
    connection: Connection, request: bytes, *, timeout: float, collect_text: bool = False
) -> StreamOutcome:
    """Send one streaming completion request and measure it; never raises for server or network errors."""
    outcome = StreamOutcome(text_parts=[] if collect_text else None)
    try:
        exchange = await connection.exchange(request, outcome, streaming=True, timeout=timeout)
    except _NoResponse:
        return outcome
    return exchange.conclude()


async def fetch(
    endpoint: Endpoint, path: str, *, timeout: float = 10.0, body: dict[str, Any] | None = None
) -> tuple[int, bytes]:
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
