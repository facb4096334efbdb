"""The load level on a bare ``epoll`` loop: the client's CPU per streamed token near the floor.

At one token per read, what a read costs is what a token costs. Through asyncio, a read passes the
selector wrapper, a ``Handle``, a context switch into the callback and the transport; here it is
``epoll.poll``, ``recv_into`` and the parser, and is stamped with ``time.perf_counter`` right after
``recv_into``. Used for plain-HTTP levels on Linux; :mod:`tools.bench.load` runs asyncio otherwise.
Semantics match the asyncio path: keep-alive connections (one request at a time each), a retry
when a reused connection turns out closed, per-request timeouts, Poisson arrivals.
"""

from __future__ import annotations

import errno
import heapq
import random
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence

from tools.bench.client import Endpoint
from tools.bench.events import StreamOutcome
from tools.bench.links import READ_BUFFER_BYTES, Exchange
from tools.bench.wire import WireError

IN, OUT = select.EPOLLIN | select.EPOLLRDHUP, select.EPOLLOUT
HOUSEKEEPING_SECONDS = 0.1


class _Conn:
    def __init__(self, address: tuple[object, ...], family: int) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        status = self.sock.connect_ex(address)
        self.connect_failure = None if status in (0, errno.EINPROGRESS) else errno.errorcode.get(status, str(status))
        self.connecting = True
        self.fd = self.sock.fileno()
        self.index = -1  # the request in flight
        self.exchange: Exchange | None = None
        self.unsent = memoryview(b"")
        self.served = 0
        self.deadline = 0.0


class EpollLevel:
    """Runs ``requests`` with at most ``concurrency`` in flight; ``rate`` (per second) makes arrivals Poisson."""

    def __init__(
        self,
        endpoint: Endpoint,
        requests: Sequence[bytes],
        *,
        concurrency: int,
        rate: float | None,
        timeout: float,
        seed: int,
        stop: threading.Event | None = None,
    ) -> None:
        self.stop = stop
        family, _, _, _, address = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)[0]
        self.address, self.family, self.where = address, family, f"{endpoint.host}:{endpoint.port}"
        self.requests, self.concurrency, self.timeout = requests, max(1, concurrency), timeout
        self.outcomes = [StreamOutcome() for _ in requests]
        self.retried: set[int] = set()
        self.ready: deque[int] = deque()
        self.arrivals: list[tuple[float, int]] = []
        started = time.perf_counter()
        if rate is None:
            self.ready.extend(range(len(requests)))
        else:
            rng, moment = random.Random(seed), started
            for index in range(len(requests)):
                heapq.heappush(self.arrivals, (moment, index))
                moment += rng.expovariate(rate)
        self.poll = select.epoll()
        self.conns: dict[int, _Conn] = {}
        self.idle: list[_Conn] = []
        self.remaining = len(requests)
        self.view = memoryview(bytearray(READ_BUFFER_BYTES))

    def run(self) -> list[StreamOutcome]:
        poll, conns, on_event, clock = self.poll.poll, self.conns, self._on_event, time.perf_counter
        next_check = 0.0
        try:
            while self.remaining:
                now = clock()
                if now >= next_check:  # timeouts and the stop flag, a few times a second (cost grows with conns)
                    if self.stop is not None and self.stop.is_set():
                        self._abandon()
                        break
                    self._expire(now)
                    next_check = now + HOUSEKEEPING_SECONDS
                while self.arrivals and self.arrivals[0][0] <= now:
                    self.ready.append(heapq.heappop(self.arrivals)[1])
                if self.ready:
                    self._dispatch()
                wait = min(next_check, self.arrivals[0][0]) - now if self.arrivals else next_check - now
                for fd, mask in poll(max(wait, 0.0)):
                    on_event(conns[fd], mask)
        finally:
            for conn in list(self.conns.values()):
                self._close(conn)
            self.poll.close()
        return self.outcomes

    def _dispatch(self) -> None:
        while self.ready and (self.idle or len(self.conns) < self.concurrency):
            index = self.ready.popleft()
            if self.idle and index not in self.retried:
                self._send(self.idle.pop(), index)
                continue
            if len(self.conns) >= self.concurrency:  # a retry goes on a fresh connection: drop an idle one
                self._close(self.idle[0])
            conn = _Conn(self.address, self.family)
            if conn.connect_failure is not None:
                conn.sock.close()
                self._fail(index, f"cannot connect to {self.where}: {conn.connect_failure}")
                continue
            self.conns[conn.fd] = conn
            conn.index, conn.deadline = index, time.perf_counter() + self.timeout
            self.poll.register(conn.fd, OUT | IN)

    def _send(self, conn: _Conn, index: int) -> None:
        conn.index, conn.exchange = index, Exchange(self.outcomes[index], streaming=True)
        outcome = self.outcomes[index]
        outcome.started = time.perf_counter()
        conn.deadline = outcome.started + self.timeout
        conn.unsent = memoryview(self.requests[index])
        self._write(conn)

    def _write(self, conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.unsent)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as error:
            self._lost(conn, str(error))
            return
        conn.unsent = conn.unsent[sent:]
        self.poll.modify(conn.fd, IN | OUT if conn.unsent else IN)

    def _on_event(self, conn: _Conn, mask: int) -> None:
        if conn.connecting:
            if not mask & (OUT | select.EPOLLERR | select.EPOLLHUP):
                return
            failure = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if failure:
                index = conn.index
                self._close(conn)
                self._fail(index, f"cannot connect to {self.where}: {errno.errorcode.get(failure, failure)}")
                return
            conn.connecting = False
            self._send(conn, conn.index)
            return
        if mask & OUT and conn.unsent:
            self._write(conn)
        if mask & (IN | select.EPOLLERR | select.EPOLLHUP):
            try:
                count = conn.sock.recv_into(self.view)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as problem:
                self._lost(conn, str(problem))
                return
            if count == 0:
                self._lost(conn, None)
                return
            exchange = conn.exchange
            if exchange is None:
                return
            malformed = exchange.feed(bytes(self.view[:count]), time.perf_counter())
            if malformed is not None or exchange.parser.complete:
                self._done(conn, malformed)

    def _done(self, conn: _Conn, error: str | None) -> None:
        exchange = conn.exchange
        assert exchange is not None
        outcome = exchange.outcome
        outcome.finished = time.perf_counter()
        outcome.error = outcome.error or error
        exchange.conclude()
        conn.exchange, conn.index, conn.served = None, -1, conn.served + 1
        self.remaining -= 1
        if exchange.parser.keep_alive and error is None and conn.fd in self.conns:
            self.idle.append(conn)
        else:
            self._close(conn)

    def _lost(self, conn: _Conn, detail: str | None) -> None:
        exchange, index, reused = conn.exchange, conn.index, conn.served > 0
        self._close(conn)
        if exchange is None:
            return
        if reused and exchange.parser.status == 0 and index not in self.retried:
            self.retried.add(index)  # an idle keep-alive connection the server had closed: retry once
            self.outcomes[index] = StreamOutcome()
            self.ready.appendleft(index)
            return
        failure: str | None = None
        try:
            exchange.parser.feed_eof()
        except WireError as problem:
            failure = f"{problem}" + (f" ({detail})" if detail else "")
        conn.exchange, conn.index = exchange, index
        self._done(conn, failure)

    def _fail(self, index: int, error: str) -> None:
        outcome = self.outcomes[index]
        outcome.error, outcome.finished = error, time.perf_counter()
        self.remaining -= 1

    def _expire(self, now: float) -> None:
        for conn in [conn for conn in self.conns.values() if conn.index >= 0 and conn.deadline <= now]:
            index, connecting = conn.index, conn.connecting
            self._close(conn)
            self._fail(
                index,
                f"cannot connect to {self.where}: timeout"
                if connecting
                else f"no complete response within {self.timeout:.0f} s",
            )

    def _abandon(self) -> None:
        """Stopped from outside: every request not finished fails, so the outcomes stay complete."""
        for outcome in self.outcomes:
            if not outcome.finished:
                outcome.error, outcome.finished = "stopped: the benchmark's time limit was reached", time.perf_counter()
        self.remaining = 0

    def _close(self, conn: _Conn) -> None:
        if self.conns.pop(conn.fd, None) is not None:
            self.poll.unregister(conn.fd)
        if conn in self.idle:
            self.idle.remove(conn)
        conn.sock.close()


def run_level_epoll(
    endpoint: Endpoint,
    requests: Sequence[bytes],
    *,
    concurrency: int,
    request_rate: float | None,
    timeout: float,
    seed: int = 0,
    stop: threading.Event | None = None,
) -> tuple[list[StreamOutcome], float]:
    started = time.perf_counter()
    outcomes = EpollLevel(
        endpoint, requests, concurrency=concurrency, rate=request_rate, timeout=timeout, seed=seed, stop=stop
    ).run()
    finished = max((outcome.finished for outcome in outcomes), default=time.perf_counter())
    return outcomes, max(finished - started, 0.0)
