"""The connections under the benchmark client: one request/response exchange at a time each.

Plain HTTP uses a raw non-blocking socket watched with ``loop.add_reader``: each readable event is
one ``recv_into`` a preallocated buffer and a parse, with no transport or protocol layers between
(asyncio's transports add several Python calls and, for a plain Protocol, a 256 KiB allocation per
read, which at one token per read cost more than the parsing). HTTPS goes through an asyncio SSL
transport with a :class:`asyncio.BufferedProtocol`. Reads are stamped with ``time.perf_counter``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time

from tools.bench.events import ERROR_BODY_CAP, EventSink, StreamOutcome
from tools.bench.wire import ResponseParser, WireError

READ_BUFFER_BYTES = 64 * 1024


class Exchange:
    """Per-request parsing state: the HTTP response, and for a 200 streaming response its events."""

    def __init__(self, outcome: StreamOutcome, streaming: bool) -> None:
        self.outcome, self.streaming = outcome, streaming
        self.parser = ResponseParser()
        self.sink = EventSink(outcome)
        self.raw_body: list[bytes] = []

    def feed(self, data: bytes, now: float) -> str | None:
        """Parse bytes read at ``now``; returns an error text if the response is malformed."""
        try:
            body = self.parser.feed(data)
        except (WireError, ValueError) as error:
            return f"bad response: {error}"
        if body:
            if self.streaming and self.parser.status == 200:
                self.sink.feed(body, now)
            else:
                self.raw_body.append(body)
        return None

    def conclude(self) -> StreamOutcome:
        """Judge a finished streaming exchange: HTTP errors and text-less streams are failures."""
        outcome = self.outcome
        outcome.status = self.parser.status
        if outcome.error is None and outcome.status != 200:
            body = b"".join(self.raw_body)[:ERROR_BODY_CAP].decode("utf-8", "replace")
            outcome.error = f"HTTP {outcome.status}: {body.strip() or self.parser.reason}"
        if outcome.error is None and outcome.first_token is None:
            outcome.error = "the stream ended without any generated text"
        outcome.ok = outcome.error is None
        return outcome


class Link:
    """What both kinds of connection share: feeding the current exchange and ending it."""

    def __init__(self) -> None:
        self.exchange: Exchange | None = None
        self.future: asyncio.Future[None] | None = None
        self.closed = False

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None:
            return
        error = exchange.feed(data, time.perf_counter())
        if error is not None or exchange.parser.complete:
            self.finish(error)

    def lost(self, detail: str | None) -> None:
        """The peer closed the connection (or it broke): complete or fail the exchange in flight."""
        self.close()
        exchange = self.exchange
        if exchange is not None:
            try:
                exchange.parser.feed_eof()
                self.finish(None)
            except WireError as error:
                self.finish(f"{error}" + (f" ({detail})" if detail else ""))

    def finish(self, error: str | None) -> None:
        exchange, self.exchange = self.exchange, None
        if exchange is None:
            return
        exchange.outcome.finished = time.perf_counter()
        if error is not None:
            exchange.outcome.error = error
        if not exchange.parser.keep_alive:
            self.close()
        future, self.future = self.future, None
        if future is not None and not future.done():
            future.set_result(None)


class SocketLink(Link):
    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.sock, self.loop = sock, loop
        self.view = memoryview(bytearray(READ_BUFFER_BYTES))
        self._sending: set[asyncio.Task[None]] = set()
        loop.add_reader(sock.fileno(), self._readable)

    @classmethod
    async def open(cls, host: str, port: int) -> SocketLink:
        loop = asyncio.get_running_loop()
        family, kind, proto, _, address = (await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM))[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, address)
        except BaseException:
            sock.close()
            raise
        return cls(sock, loop)

    def _readable(self) -> None:
        try:
            count = self.sock.recv_into(self.view)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self.lost(str(error))
            return
        if count == 0:
            self.lost(None)
        else:
            self.received(bytes(self.view[:count]))

    def write(self, data: bytes) -> None:
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as error:
            self.lost(str(error))
            return
        if sent < len(data):  # a large prompt: let the loop send the rest as the socket drains
            task = self.loop.create_task(self.loop.sock_sendall(self.sock, data[sent:]))
            self._sending.add(task)
            task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.lost(str(task.exception()))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.remove_reader(self.sock.fileno())
            for task in self._sending:
                task.cancel()
            self.sock.close()


class TlsLink(Link, asyncio.BufferedProtocol):
    def __init__(self) -> None:
        super().__init__()
        self.transport: asyncio.Transport | None = None
        self.view = memoryview(bytearray(READ_BUFFER_BYTES))

    @classmethod
    async def open(cls, host: str, port: int) -> TlsLink:
        loop = asyncio.get_running_loop()
        _, link = await loop.create_connection(cls, host, port, ssl=ssl.create_default_context())
        return link

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view

    def buffer_updated(self, nbytes: int) -> None:
        self.received(bytes(self.view[:nbytes]))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost(str(exc) if exc else None)

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()
