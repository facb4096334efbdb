"""The work a long scripted run does, for the loop-overhead benchmark: what each step records.

Every step calls ``update_state`` with one finding (two lines of evidence), a task update and a new
plan; every tenth step also stores a three-level benchmark result the way ``run_bench`` does
(``record_benchmark``), without a server. The state document therefore grows the way a long tuning
run makes it grow: mostly findings, and a benchmark record now and then.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput
from tools.bench.record import record_benchmark
from tools.bench.runner import BenchParams, BenchRun, LevelReport
from tools.bench.stats import Distribution

BENCH_EVERY = 10
_STATUSES = ("pending", "in_progress", "done")


class StoreResultArgs(ToolArgs):
    label: str = Field(description="Name of the run")
    concurrency: list[int] = Field(description="Levels measured")
    seed: int = 0


class StoreResultOutput(ToolOutput):
    benchmark_id: str


def _distribution(median: float, count: int) -> Distribution:
    return Distribution(mean=median * 1.05, median=median, p90=median * 1.4, p99=median * 2.1, count=count)


def _level(concurrency: int, seed: int) -> LevelReport:
    requests = max(10, 5 * concurrency)
    tokens_per_s = 40.0 * concurrency**0.8 + seed % 7
    duration = requests * 256 / tokens_per_s
    return LevelReport(
        concurrency=concurrency,
        num_requests=requests,
        completed=requests,
        failed=0,
        duration_seconds=duration,
        request_throughput=requests / duration,
        input_tokens=requests * 1024,
        output_tokens=requests * 256,
        output_throughput=tokens_per_s,
        total_throughput=tokens_per_s * 5,
        token_counts_from="usage",
        ttft_ms=_distribution(180.0 + concurrency, requests),
        itl_ms=_distribution(24.0 + concurrency / 8, requests * 255),
        tpot_ms=_distribution(25.0 + concurrency / 8, requests),
        e2e_ms=_distribution(6600.0 + 40 * concurrency, requests),
    )


class StoreResultTool(Tool[StoreResultArgs, StoreResultOutput]):
    """Stores a benchmark result as ``run_bench`` would, with made-up figures and no server."""

    name = "store_result"
    description = "Store a benchmark result in the state (benchmark workload stand-in for run_bench)."
    args_model = StoreResultArgs
    output_model = StoreResultOutput
    timeout_seconds = 10.0

    def run(self, args: StoreResultArgs, context: ToolContext) -> StoreResultOutput:
        params = BenchParams(base_url="http://127.0.0.1:30000", model="target", concurrency=args.concurrency)
        run = BenchRun(params=params, levels=[_level(level, args.seed) for level in args.concurrency])
        record = record_benchmark(context.state, run, label=args.label, correctness=None)
        return StoreResultOutput(benchmark_id=record.id)


def decision(step: int, bench_every: int = BENCH_EVERY) -> dict[str, Any]:
    """The scripted decision of one step (0-based); a benchmark result every ``bench_every`` steps
    (never when 0)."""
    memory = 0.80 + (step % 9) / 100
    plan = {
        "tool": "update_state",
        "arguments": {
            "tasks": [
                {"id": f"t{step % 12}", "title": f"tune setting group {step % 12}", "status": _STATUSES[step % 3]}
            ],
            "findings": [
                {
                    "summary": f"step {step}: relaunched with mem_fraction {memory:.2f} and "
                    f"cuda_graph_max_bs {8 << step % 4}; ready after {40 + step % 17} s, "
                    f"decode throughput {900 + step % 113} tok/s",
                    "evidence": [
                        f"[2026-11-30 10:{step % 60:02d}:00] The server is fired up and ready to roll!",
                        f"Decode batch. #running-req: {step % 64}, #token: {step * 7 % 90000}, "
                        f"gen throughput (token/s): {900 + step % 113}.00",
                    ],
                }
            ],
            "next_steps": [
                f"benchmark concurrency {2 ** (step % 7)}",
                "compare with the baseline",
                "record the best configuration",
            ],
        },
    }
    actions: list[dict[str, Any]] = [plan]
    if bench_every and step % bench_every == bench_every - 1:
        actions.append(
            {
                "tool": "store_result",
                "arguments": {"label": f"sweep after step {step}", "concurrency": [1, 8, 64], "seed": step},
            }
        )
    return {"thought": f"step {step}: try the next setting and record what happened", "actions": actions}
