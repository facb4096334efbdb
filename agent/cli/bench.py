"""``agent bench``: benchmark an OpenAI-compatible server from the command line (the run_bench tool).

With ``--state-dir`` the result is stored in that state's ``benchmarks`` (under the directory lock,
with the config of the engine serving the URL when the agent started it); without, nothing is kept.
Exit codes: 0 measured, 1 the benchmark failed (or every request of a level failed), 2 usage error.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.app import app
from agent.cli.common import (
    EXIT_DONE,
    EXIT_FAILED,
    HostOption,
    JsonOption,
    SshConfigOption,
    StateDirOption,
    finish,
    host_overrides,
    print_json,
    print_text,
    usage_errors,
)
from agent.cli.common import progress as print_progress
from agent.config import load_config
from agent.events import UsageError
from agent.wiring import tool_session
from tools.base import ToolRegistry, ToolResult
from tools.bench.runner import LevelReport
from tools.bench.stats import Distribution
from tools.bench.tools import RunBenchOutput, RunBenchTool
from tools.records import BenchmarkRecord


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--concurrency takes comma-separated integers such as 1,8,64, not {text!r}") from None
    if not levels or min(levels) < 1:
        raise UsageError("--concurrency needs at least one level, each >= 1")
    return levels


def _execute(
    arguments: dict[str, Any], state_dir: Path | None, overrides: dict[str, Any]
) -> tuple[ToolResult, BenchmarkRecord | None]:
    """Run the tool; returns the result and the stored benchmark record (None when it failed). Without a
    state directory, the run's state lives in a temporary one and is discarded."""
    with contextlib.ExitStack() as stack:
        directory = (
            state_dir.absolute()
            if state_dir is not None
            else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="opsloop-bench-")))
        )
        config = load_config(directory, overrides=overrides)
        with tool_session(
            directory, config, goal="benchmarks", progress=print_progress, host_overrides=overrides
        ) as session:
            result = session.execute(ToolRegistry([RunBenchTool()]), "run_bench", arguments)
            return result, session.state.benchmarks[-1] if result.ok else None


def _ms(distribution: Distribution, key: str) -> str:
    value = getattr(distribution, key)
    return "-" if value is None else f"{value:.1f}"


def _row(level: LevelReport) -> str:
    accept = f"{level.spec.accept_length:.2f}" if level.spec is not None and level.spec.accept_length else "-"
    return (
        f"{level.concurrency:>5} {level.completed:>4}/{level.failed:<4} {level.request_throughput:>8.2f} "
        f"{level.output_throughput:>10.1f} {level.total_throughput:>10.1f} "
        f"{_ms(level.ttft_ms, 'median') + '/' + _ms(level.ttft_ms, 'p99'):>16} "
        f"{_ms(level.itl_ms, 'median') + '/' + _ms(level.itl_ms, 'p99'):>15} "
        f"{_ms(level.tpot_ms, 'median'):>9} "
        f"{_ms(level.e2e_ms, 'median') + '/' + _ms(level.e2e_ms, 'p99'):>17} {accept:>7}"
    )


def render(record: BenchmarkRecord, output: RunBenchOutput) -> str:
    metrics = record.metrics
    lines = [f"{record.id}: {record.label}"]
    if "correctness" in metrics:
        lines.append(f"correctness: {metrics['correctness']['summary']}")
    lines.append(
        f"{'conc':>5} {'ok/fail':>9} {'req/s':>8} {'out tok/s':>10} {'tot tok/s':>10} "
        f"{'TTFT med/p99 ms':>16} {'ITL med/p99 ms':>15} {'TPOT med':>9} {'E2E med/p99 ms':>17} {'accept':>7}"
    )
    for level in (LevelReport.model_validate(item) for item in metrics["levels"]):
        lines.append(_row(level))
        lines += [f"      {error.count}x {error.message}" for error in level.errors]
    lines += [f"warning: {warning}" for warning in output.warnings]
    return "\n".join(lines) + "\n"


@app.command("bench")
def bench(
    base_url: Annotated[str, typer.Option("--base-url", help="Scheme, host and port, e.g. http://127.0.0.1:30000")],
    model: Annotated[str, typer.Option("--model", help="Model name as served.")],
    concurrency: Annotated[str, typer.Option("--concurrency", help="Levels, e.g. 1,8,64.")] = "1",
    num_prompts: Annotated[int | None, typer.Option("--num-prompts", help="Requests per level.")] = None,
    input_len: Annotated[int, typer.Option("--input-len", help="Prompt length (tokens).")] = 1024,
    output_len: Annotated[int, typer.Option("--output-len", help="Output length (tokens).")] = 256,
    request_rate: Annotated[float | None, typer.Option("--request-rate", help="Poisson arrivals/s.")] = None,
    endpoint: Annotated[str, typer.Option("--endpoint", help="chat or completions.")] = "chat",
    backend: Annotated[str, typer.Option("--backend", help="opsloop or sglang (bench_serving).")] = "opsloop",
    label: Annotated[str, typer.Option("--label", help="Name for this run in the state.")] = "",
    correctness: Annotated[
        bool, typer.Option("--correctness/--no-correctness", help="Run the correctness probe first.")
    ] = True,
    json_output: JsonOption = False,
    state_dir: StateDirOption = None,
    host: HostOption = None,
    ssh_config: SshConfigOption = None,
) -> None:
    """Benchmark a server over concurrency levels: throughput, TTFT, ITL, TPOT, E2E, spec acceptance."""
    with usage_errors():
        arguments: dict[str, Any] = {
            "base_url": base_url,
            "model": model,
            "concurrency": parse_levels(concurrency),
            "input_len": input_len,
            "output_len": output_len,
            "endpoint": endpoint,
            "backend": backend,
            "label": label,
            "correctness_probe": correctness,
        }
        if num_prompts is not None:
            arguments["num_prompts"] = num_prompts
        if request_rate is not None:
            arguments["request_rate"] = request_rate
        if host:
            arguments["host"] = host[0]
        result, record = _execute(arguments, state_dir, host_overrides(host, ssh_config))
        if not result.ok and (result.error or "").startswith("invalid arguments"):
            raise UsageError(result.error or "invalid arguments")
    if record is None:
        typer.echo(f"agent: benchmark failed: {result.error}", err=True)
        finish(EXIT_FAILED)
        return
    output = RunBenchOutput.model_validate(result.output)
    if json_output:
        print_json({**record.model_dump(mode="json"), "warnings": output.warnings})
    else:
        print_text(render(record, output))
    every_request_failed = any(level.completed == 0 for level in output.levels)
    finish(EXIT_FAILED if every_request_failed else EXIT_DONE)
