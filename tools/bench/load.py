"""Drive one load level: a fixed number of requests at a concurrency, or as a Poisson arrival stream.

With no request rate, ``concurrency`` workers each own a keep-alive connection and send requests
back to back (sglang.bench_serving's ``--request-rate inf --max-concurrency N``). With a rate,
arrivals are Poisson and at most ``concurrency`` are in flight; connections are pooled.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence

from tools.bench.client import Connection, Endpoint, StreamOutcome, stream


async def _fixed_concurrency(endpoint: Endpoint, requests: Sequence[bytes], concurrency: int,
                             timeout: float) -> list[StreamOutcome]:
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


async def _poisson(endpoint: Endpoint, requests: Sequence[bytes], concurrency: int, rate: float,
                   timeout: float, seed: int) -> list[StreamOutcome]:
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


async def run_level(endpoint: Endpoint, requests: Sequence[bytes], *, concurrency: int,
                    request_rate: float | None, timeout: float,
                    seed: int = 0) -> tuple[list[StreamOutcome], float]:
    """Run the requests; returns the outcomes and the wall time from first send to last finish."""
    started = time.perf_counter()
    if request_rate is None:
        outcomes = await _fixed_concurrency(endpoint, requests, concurrency, timeout)
    else:
        outcomes = await _poisson(endpoint, requests, concurrency, request_rate, timeout, seed)
    finished = max((outcome.finished for outcome in outcomes), default=time.perf_counter())
    return outcomes, max(finished - started, 0.0)
