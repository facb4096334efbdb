"""A benchmark sweep: for each concurrency level, warm up, read the speculation counters, run the
load, read them again, and summarize. Shared by the ``run_bench`` tool and ``agent bench``."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field, field_validator

from tools.base import ToolArgs
from tools.bench.client import Connection, Endpoint, build_encoder, stream
from tools.bench.load import IoEngine, run_level
from tools.bench.prompts import PATHS, EndpointKind, PromptStyle, build_requests
from tools.bench.spec import SpecAcceptance, acceptance, read_metrics
from tools.bench.stats import LevelResult, summarize


class BenchParams(ToolArgs):
    """What to send and how hard. Lengths are in tokens (prompt length approximate, see prompts.py)."""

    base_url: str = Field(description="Scheme, host and port of the server, e.g. http://127.0.0.1:30000")
    model: str = Field(description="Model name as served (the id in GET /v1/models)")
    endpoint: EndpointKind = "chat"
    concurrency: list[int] = Field(default_factory=lambda: [1], description="Levels to sweep, e.g. [1, 8, 64]")
    num_prompts: int | None = Field(
        default=None, ge=1, description="Requests per level; default max(10, 5 x concurrency)"
    )
    input_len: int = Field(default=1024, ge=1, le=1_000_000, description="Prompt length, in tokens")
    output_len: int = Field(default=256, ge=1, le=1_000_000, description="Output length, in tokens")
    request_rate: float | None = Field(
        default=None, gt=0, description="Poisson arrivals per second; default: back to back"
    )
    ignore_eos: bool = True
    temperature: float = Field(default=0.0, ge=0.0)
    prompt_style: PromptStyle = "words"
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Merged into every request body (e.g. chat_template_kwargs)"
    )
    warmup_requests: int = Field(default=1, ge=0, le=100)
    request_timeout_seconds: float = Field(default=600.0, gt=0, description="Limit for one request")
    seed: int = 0
    io_engine: IoEngine = Field(
        default="auto",
        description="Client I/O: 'auto' (epoll for plain HTTP on Linux, the leanest), 'epoll' or 'asyncio'",
    )

    @field_validator("concurrency")
    @classmethod
    def _positive_levels(cls, levels: list[int]) -> list[int]:
        if not levels or any(level < 1 for level in levels):
            raise ValueError("concurrency needs at least one level, each >= 1")
        return levels

    def requests_for(self, concurrency: int) -> int:
        return self.num_prompts if self.num_prompts is not None else max(10, 5 * concurrency)


class LevelReport(LevelResult):
    spec: SpecAcceptance | None = None


class BenchRun(BaseModel):
    client: str = "opsloop"
    params: BenchParams
    levels: list[LevelReport]


async def _warm_up(endpoint: Endpoint, requests: list[bytes], timeout: float) -> None:
    connection = Connection(endpoint)
    try:
        for request in requests:
            await stream(connection, request, timeout=timeout)
    finally:
        connection.close()


async def run_sweep(params: BenchParams) -> BenchRun:
    endpoint = Endpoint.parse(params.base_url)
    path = PATHS[params.endpoint]
    encode = build_encoder()

    def frame(body: bytes) -> bytes:
        return endpoint.request_bytes("POST", path, body)

    def make(count: int, seed: int, output_len: int) -> list[bytes]:
        return build_requests(
            count=count,
            endpoint=params.endpoint,
            model=params.model,
            input_len=params.input_len,
            output_len=output_len,
            style=params.prompt_style,
            ignore_eos=params.ignore_eos,
            temperature=params.temperature,
            extra_body=params.extra_body,
            seed=seed,
            encode=encode,
            frame=frame,
        )

    if params.warmup_requests:
        await _warm_up(
            endpoint,
            make(params.warmup_requests, params.seed - 1, min(params.output_len, 16)),
            params.request_timeout_seconds,
        )
    reports = []
    for number, concurrency in enumerate(params.concurrency):
        count, seed = params.requests_for(concurrency), params.seed + 1000 * (number + 1)
        requests = make(count, seed, params.output_len)
        before = await read_metrics(endpoint)
        outcomes, duration = await run_level(
            endpoint,
            requests,
            concurrency=concurrency,
            request_rate=params.request_rate,
            timeout=params.request_timeout_seconds,
            seed=params.seed + number,
            engine=params.io_engine,
        )
        spec = await acceptance(endpoint, before)
        level = summarize(
            outcomes,
            concurrency=concurrency,
            request_rate=params.request_rate,
            duration_seconds=duration,
            expected_input_tokens=params.input_len,
        )
        reports.append(LevelReport(**level.model_dump(), spec=spec))
    return BenchRun(params=params, levels=reports)


def run_sweep_blocking(params: BenchParams) -> BenchRun:
    """Run the sweep on a fresh event loop (tools run in worker threads)."""
    return asyncio.run(run_sweep(params))
