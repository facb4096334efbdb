"""Store benchmark and correctness results in the state, with the engine config that produced them."""

from __future__ import annotations

from typing import Any

from tools.base import ToolState
from tools.bench.client import Endpoint
from tools.bench.correctness import CorrectnessVerdict
from tools.bench.runner import BenchRun
from tools.records import BenchmarkRecord, ProcessRecord, is_live


def engine_for(state: ToolState, base_url: str) -> ProcessRecord | None:
    """The live engine serving ``base_url``: matched by port, else the only live engine, else None."""
    try:
        port = Endpoint.parse(base_url).port
    except ValueError:
        return None
    live = [record for record in reversed(state.processes) if record.kind == "engine" and is_live(record)]
    for record in live:
        if record.port == port:
            return record
    return live[0] if len(live) == 1 else None


def engine_config(state: ToolState, base_url: str) -> dict[str, Any]:
    record = engine_for(state, base_url)
    if record is None:
        return {"base_url": base_url, "note": "no engine started by the agent serves this URL"}
    return {**record.config, "engine_process": record.name, "base_url": base_url}


def record_benchmark(
    state: ToolState, run: BenchRun, *, label: str, correctness: CorrectnessVerdict | None
) -> BenchmarkRecord:
    params = run.params
    metrics: dict[str, Any] = {
        "client": run.client,
        "endpoint": params.endpoint,
        "input_len": params.input_len,
        "output_len": params.output_len,
        "request_rate": params.request_rate,
        "ignore_eos": params.ignore_eos,
        "levels": [level.model_dump(mode="json") for level in run.levels],
    }
    if correctness is not None:
        metrics["correctness"] = {"passed": correctness.passed, "summary": correctness.summary}
    record = BenchmarkRecord(
        id=state.next_id("bench", [item.id for item in state.benchmarks]),
        label=label or default_label(run),
        engine_config=engine_config(state, params.base_url),
        metrics=metrics,
    )
    state.benchmarks.append(record)
    return record


def default_label(run: BenchRun) -> str:
    params = run.params
    levels = ",".join(str(level) for level in params.concurrency)
    rate = f" rate={params.request_rate}/s" if params.request_rate else ""
    return f"{run.client} {params.endpoint} c={levels} in={params.input_len} out={params.output_len}{rate}"


def record_correctness(state: ToolState, verdict: CorrectnessVerdict, base_url: str) -> None:
    evidence = [
        f"{result.name}: {result.answer[:120]!r} {'; '.join(result.problems)}".strip()
        for result in verdict.results
        if not result.passed
    ]
    config = engine_config(state, base_url)
    where = config.get("engine_process", base_url)
    if verdict.passed:
        state.add_finding(f"{verdict.summary} on {where}")
    else:
        state.add_finding(
            f"{verdict.summary} on {where}: output is wrong or garbled, so this "
            "configuration's throughput does not count",
            evidence=evidence,
        )
