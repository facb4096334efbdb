"""Benchmark result models and the arithmetic that turns per-request outcomes into them.

Definitions follow sglang.bench_serving so numbers are comparable: TTFT = first generated text
minus request start; ITL = gaps between consecutive content-bearing stream events; TPOT = (E2E -
TTFT) / (output tokens - 1) per request; E2E = last byte minus request start; throughputs divide
by the wall time from the first request sent to the last response finished.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from tools.bench.client import StreamOutcome


class Distribution(BaseModel):
    """Milliseconds; all None when there were no samples."""

    mean: float | None = None
    median: float | None = None
    p90: float | None = None
    p99: float | None = None
    count: int = 0


class ErrorCount(BaseModel):
    message: str
    count: int


class LevelResult(BaseModel):
    """One load level (a concurrency or a request rate) of a benchmark run."""

    concurrency: int
    request_rate: float | None = None
    num_requests: int
    completed: int
    failed: int
    duration_seconds: float
    request_throughput: float
    input_tokens: int
    output_tokens: int
    output_throughput: float
    total_throughput: float
    token_counts_from: str = Field(description="'usage' when the server reported token counts, else 'events'")
    ttft_ms: Distribution
    itl_ms: Distribution
    tpot_ms: Distribution
    e2e_ms: Distribution
    errors: list[ErrorCount] = Field(default_factory=list)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on already sorted values."""
    if not sorted_values:
        raise ValueError("no values")
    position = (len(sorted_values) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def distribution_ms(seconds: Sequence[float]) -> Distribution:
    if not seconds:
        return Distribution()
    values = sorted(value * 1000.0 for value in seconds)
    return Distribution(
        mean=sum(values) / len(values),
        median=percentile(values, 0.5),
        p90=percentile(values, 0.9),
        p99=percentile(values, 0.99),
        count=len(values),
    )


def summarize(
    outcomes: Sequence[StreamOutcome],
    *,
    concurrency: int,
    request_rate: float | None,
    duration_seconds: float,
    expected_input_tokens: int,
) -> LevelResult:
    """Aggregate one level. Failed requests count only in ``failed`` and ``errors``."""
    good = [outcome for outcome in outcomes if outcome.ok]
    from_usage = bool(good) and all(outcome.completion_tokens is not None for outcome in good)
    ttfts, itls, tpots, e2es = [], [], [], []
    input_tokens = output_tokens = 0
    for outcome in good:
        assert outcome.first_token is not None
        produced = (
            outcome.completion_tokens
            if from_usage and outcome.completion_tokens is not None
            else outcome.content_events
        )
        output_tokens += produced
        input_tokens += outcome.prompt_tokens if outcome.prompt_tokens is not None else expected_input_tokens
        ttft = outcome.first_token - outcome.started
        e2e = outcome.finished - outcome.started
        ttfts.append(ttft)
        e2es.append(e2e)
        itls.extend(outcome.chunk_gaps)
        if produced > 1:
            tpots.append((e2e - ttft) / (produced - 1))
    errors = Counter(outcome.error or "unknown error" for outcome in outcomes if not outcome.ok)
    duration = max(duration_seconds, 1e-9)
    return LevelResult(
        concurrency=concurrency,
        request_rate=request_rate,
        num_requests=len(outcomes),
        completed=len(good),
        failed=len(outcomes) - len(good),
        duration_seconds=duration_seconds,
        request_throughput=len(good) / duration,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        output_throughput=output_tokens / duration,
        total_throughput=(input_tokens + output_tokens) / duration,
        token_counts_from="usage" if from_usage else "events",
        ttft_ms=distribution_ms(ttfts),
        itl_ms=distribution_ms(itls),
        tpot_ms=distribution_ms(tpots),
        e2e_ms=distribution_ms(e2es),
        errors=[ErrorCount(message=message, count=count) for message, count in errors.most_common(10)],
    )
