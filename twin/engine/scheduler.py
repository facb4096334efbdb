"""Pace generated tokens like the simulated engine would: TTFT, inter-token latency, batching, speculation.

Aggregate decode throughput at ``c`` running requests is ``c*r1 / (1 + (c*r1/peak)**4) ** 0.25``: it grows
linearly from the single-stream rate ``r1`` and saturates at ``peak``. Each stream advances at an equal
share. Requests beyond ``max_running_requests`` (or beyond the KV cache) wait in the queue. With
speculation each verify step emits the accepted draft tokens plus the bonus token.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from twin.engine.metrics import Counters
from twin.engine.plan import Performance, SpecPlan


@dataclass
class RequestStats:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    verify_ct: int = 0
    accepted: int = 0
    ttft: float = 0.0
    latency: float = 0.0


def aggregate_rate(running: int, single: float, peak: float) -> float:
    linear = max(1, running) * single
    return float(linear / (1.0 + (linear / peak) ** 4) ** 0.25)


class Scheduler:
    def __init__(self, performance: Performance, spec: SpecPlan | None, kv_tokens: int, counters: Counters) -> None:
        self.performance, self.spec, self.counters = performance, spec, counters
        self.kv_tokens = max(1, kv_tokens)
        self._admission = asyncio.Condition()
        self._requests = 0
        self.on_admit: Callable[[int], None] | None = None  # called with the prompt length at admission
        if spec is not None and not counters.spec_accepted_per_position:
            counters.spec_accepted_per_position = [0] * spec.steps

    def per_stream_rate(self) -> float:
        running = max(1, self.counters.running)
        return aggregate_rate(running, self.performance.single_stream_tok_s, self.performance.peak_tok_s) / running

    async def _admit(self, reserve: int) -> None:
        counters = self.counters
        async with self._admission:
            counters.waiting += 1
            try:
                await self._admission.wait_for(
                    lambda: (
                        counters.running < self.performance.max_running_requests
                        and (counters.running == 0 or counters.used_tokens + reserve <= self.kv_tokens)
                    )
                )
            finally:
                counters.waiting -= 1
            counters.running += 1
            counters.used_tokens += reserve

    async def _release(self, reserve: int) -> None:
        async with self._admission:
            self.counters.running -= 1
            self.counters.used_tokens -= reserve
            self._admission.notify_all()

    def _step_tokens(self, rng: random.Random) -> int:
        """Tokens one verify step emits: accepted drafts (each accepted with chance p in turn) + bonus."""
        assert self.spec is not None
        accepted = 0
        while accepted < self.spec.steps and rng.random() < self.spec.drafter.per_position:
            accepted += 1
        return accepted + 1

    async def stream(self, prompt_tokens: int, pieces: list[str], stats: RequestStats) -> AsyncIterator[list[str]]:
        """Yield the output in the chunks and at the times the engine would produce them."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        reserve = prompt_tokens + len(pieces)
        self._requests += 1
        rng = random.Random(self._requests)
        stats.prompt_tokens = prompt_tokens
        counters = self.counters
        await self._admit(reserve)
        if self.on_admit is not None:
            self.on_admit(prompt_tokens)
        try:
            counters.requests += 1
            counters.prompt_tokens += prompt_tokens
            ttft = self.performance.ttft_ms / 1000.0 + prompt_tokens / self.performance.prefill_tok_s
            # The schedule is anchored at the request's start: a stall of this process (a busy machine) delays
            # tokens, and the ones after it catch up, so a benchmark's duration stays what the model says
            # instead of growing by every stall (short benchmarks compared by ratio would flip otherwise).
            deadline = started + ttft
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            if not pieces:
                return
            stats.ttft = loop.time() - started
            counters.ttft.observe(stats.ttft)
            produced = 1
            counters.generation_tokens += 1
            stats.completion_tokens = 1
            yield pieces[:1]
            last = loop.time()
            while produced < len(pieces):
                count = 1 if self.spec is None else self._step_tokens(rng)
                deadline += count / self.per_stream_rate()
                await asyncio.sleep(max(0.0, deadline - loop.time()))
                chunk = pieces[produced : produced + count]
                produced += len(chunk)
                self._account(chunk, count, stats)
                now = loop.time()
                counters.itl.observe(now - last)
                last = now
                yield chunk
        finally:
            stats.latency = loop.time() - started
            counters.e2e.observe(stats.latency)
            await self._release(reserve)

    def _account(self, chunk: list[str], count: int, stats: RequestStats) -> None:
        counters = self.counters
        counters.generation_tokens += len(chunk)
        stats.completion_tokens += len(chunk)
        if self.spec is None:
            return
        accepted = count - 1
        stats.verify_ct += 1
        stats.accepted += accepted
        counters.spec_verify_ct += 1
        counters.spec_accepted += accepted
        counters.spec_drafted += self.spec.steps
        for position in range(accepted):
            counters.spec_accepted_per_position[position] += 1
