"""Drive one load level: a fixed number of requests at a concurrency, or as a Poisson arrival stream.

Two interchangeable implementations: the bare epoll loop of :mod:`tools.bench.engine` (plain HTTP on
Linux, the default) and the asyncio one below (any platform, HTTPS).

With no request rate, ``concurrency`` workers each own a keep-alive connection and send requests
back to back (sglang.bench_serving's ``--request-rate inf --max-concurrency N``). With a rate,
arrivals are Poisson and at most ``concurrency`` are in flight; connections are pooled.
"""

from __future__ import annotations

import asyncio
import random
import select
import threading
import time
from collections.abc import Sequence
from typing import Literal

from tools.bench.client import Connection, Endpoint, StreamOutcome, stream
from tools.bench.engine import run_level_epoll


async def _fixed_concurrency(
    endpoint: Endpoint, requests: Sequence[bytes], concurrency: int, timeout: float
) -> list[StreamOutcome]:
    outcomes: list[StreamOutcome | None] = [None] * len(requests)
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        connection = Connection(endpoint)
        try:
            while next_index < len(requests):
                index = next_index
                next_index += 1
                outcomes[index] = await stream(connection, requests[index], timeout=timeout)
        finally:
            connection.close()

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(requests))))))
    return [outcome for outcome in outcomes if outcome is not None]


async def _poisson(
    endpoint: Endpoint, requests: Sequence[bytes], concurrency: int, rate: float, timeout: float, seed: int
) -> list[StreamOutcome]:
    rng = random.Random(seed)
    limit = asyncio.Semaphore(max(1, concurrency))
    idle: list[Connection] = []

    async def one(request: bytes) -> StreamOutcome:
        async with limit:
            connection = idle.pop() if idle else Connection(endpoint)
            outcome = await stream(connection, request, timeout=timeout)
            idle.append(connection)
            return outcome

    tasks = []
    for index, request in enumerate(requests):
        if index:
            await asyncio.sleep(rng.expovariate(rate))
        tasks.append(asyncio.create_task(one(request)))
    outcomes = list(await asyncio.gather(*tasks))
    for connection in idle:
        connection.close()
    return outcomes


IoEngine = Literal["auto", "epoll", "asyncio"]


async def run_level(
    endpoint: Endpoint,
    requests: Sequence[bytes],
    *,
    concurrency: int,
    request_rate: float | None,
    timeout: float,
    seed: int = 0,
    engine: IoEngine = "auto",
) -> tuple[list[StreamOutcome], float]:
    """Run the requests; returns the outcomes and the wall time from first send to last finish.

    ``auto`` uses the bare epoll loop (:mod:`tools.bench.engine`) for plain HTTP on Linux, in a worker
    thread so this event loop stays free; cancelling the coroutine stops that loop within 0.1 s.
    """
    use_epoll = engine == "epoll" or (engine == "auto" and not endpoint.tls and hasattr(select, "epoll"))
    if use_epoll:
        stop = threading.Event()
        try:
            return await asyncio.to_thread(
                run_level_epoll,
                endpoint,
                requests,
                concurrency=concurrency,
                request_rate=request_rate,
                timeout=timeout,
                seed=seed,
                stop=stop,
            )
        except asyncio.CancelledError:
            stop.set()
            raise
    started = time.perf_counter()
    if request_rate is None:
        outcomes = await _fixed_concurrency(endpoint, requests, concurrency, timeout)
    else:
        outcomes = await _poisson(endpoint, requests, concurrency, request_rate, timeout, seed)
    finished = max((outcome.finished for outcome in outcomes), default=time.perf_counter())
    return outcomes, max(finished - started, 0.0)
