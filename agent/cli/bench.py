"""``agent bench``: benchmark an OpenAI-compatible server from the command line (the run_bench tool).

With ``--state-dir`` the result is stored in that state's ``benchmarks`` (under the directory lock,
with the config of the engine serving the URL when the agent started it); without, nothing is kept.
Exit codes: 0 measured, 1 the benchmark failed (or every request of a level failed), 2 usage error.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.app import app
from agent.cli.common import (
    EXIT_DONE,
    EXIT_FAILED,
    JsonOption,
    StateDirOption,
    finish,
    print_json,
    print_text,
    usage_errors,
)
from agent.cli.common import progress as print_progress
from agent.config import load_config
from agent.events import UsageError
from agent.lock import StateDirectoryLock
from agent.state import ProjectState
from agent.store import StateStore
from agent.wiring import build_host, build_tool_settings
from tools.base import ToolContext, ToolRegistry, ToolResult
from tools.bench.tools import RunBenchTool


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--concurrency takes comma-separated integers such as 1,8,64, not {text!r}") from None
    if not levels or min(levels) < 1:
        raise UsageError("--concurrency needs at least one level, each >= 1")
    return levels


def _execute(arguments: dict[str, Any], state_dir: Path | None) -> tuple[ToolResult, dict[str, Any] | None]:
    """Run the tool; returns the result and the stored benchmark record (None when it failed)."""
    registry = ToolRegistry([RunBenchTool()])
    if state_dir is None:
        with tempfile.TemporaryDirectory(prefix="opsloop-bench-") as scratch:
            directory = Path(scratch)
            state = ProjectState(goal="agent bench")
            context = ToolContext(state=state, state_dir=directory, host=build_host(state, directory),
                                  settings=build_tool_settings(load_config(directory)), progress=print_progress)
            result = registry.execute("run_bench", arguments, context)
            return result, state.benchmarks[-1].model_dump(mode="json") if result.ok else None
    directory = state_dir.absolute()
    directory.mkdir(parents=True, exist_ok=True)
    with StateDirectoryLock(directory):
        store = StateStore(directory)
        state = store.load() if store.exists() else ProjectState(goal="benchmarks")
        context = ToolContext(state=state, state_dir=directory, host=build_host(state, directory),
                              settings=build_tool_settings(load_config(directory)), progress=print_progress,
                              checkpoint=lambda: store.save(state))
        result = registry.execute("run_bench", arguments, context)
        store.journal.record("direct_tool", tool="run_bench", ok=result.ok)
        store.save(state)
        store.close()
        return result, state.benchmarks[-1].model_dump(mode="json") if result.ok else None


def _ms(distribution: dict[str, Any], key: str) -> str:
    value = distribution.get(key)
    return "-" if value is None else f"{value:.1f}"


def render(record: dict[str, Any], result: ToolResult) -> str:
    metrics = record["metrics"]
    lines = [f"{record['id']}: {record['label']}"]
    if "correctness" in metrics:
        lines.append(f"correctness: {metrics['correctness']['summary']}")
    header = (f"{'conc':>5} {'ok/fail':>9} {'req/s':>8} {'out tok/s':>10} {'tot tok/s':>10} "
              f"{'TTFT med/p99 ms':>16} {'ITL med/p99 ms':>15} {'TPOT med':>9} {'E2E med/p99 ms':>17} {'accept':>7}")
    lines.append(header)
    for level in metrics["levels"]:
        spec = level.get("spec") or {}
        accept = f"{spec['accept_length']:.2f}" if spec.get("accept_length") else "-"
        lines.append(
            f"{level['concurrency']:>5} {level['completed']:>4}/{level['failed']:<4} "
            f"{level['request_throughput']:>8.2f} {level['output_throughput']:>10.1f} "
            f"{level['total_throughput']:>10.1f} "
            f"{_ms(level['ttft_ms'], 'median') + '/' + _ms(level['ttft_ms'], 'p99'):>16} "
            f"{_ms(level['itl_ms'], 'median') + '/' + _ms(level['itl_ms'], 'p99'):>15} "
            f"{_ms(level['tpot_ms'], 'median'):>9} "
            f"{_ms(level['e2e_ms'], 'median') + '/' + _ms(level['e2e_ms'], 'p99'):>17} {accept:>7}")
        lines += [f"      {error['count']}x {error['message']}" for error in level.get("errors", [])]
    output = result.output or {}
    lines += [f"warning: {warning}" for warning in output.get("warnings", [])]
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
    correctness: Annotated[bool, typer.Option("--correctness/--no-correctness",
                                              help="Run the correctness probe first.")] = True,
    json_output: JsonOption = False,
    state_dir: StateDirOption = None,
) -> None:
    """Benchmark a server over concurrency levels: throughput, TTFT, ITL, TPOT, E2E, spec acceptance."""
    with usage_errors():
        arguments: dict[str, Any] = {
            "base_url": base_url, "model": model, "concurrency": parse_levels(concurrency),
            "input_len": input_len, "output_len": output_len, "endpoint": endpoint, "backend": backend,
            "label": label, "correctness_probe": correctness}
        if num_prompts is not None:
            arguments["num_prompts"] = num_prompts
        if request_rate is not None:
            arguments["request_rate"] = request_rate
        result, record = _execute(arguments, state_dir)
        if not result.ok and (result.error or "").startswith("invalid arguments"):
            raise UsageError(result.error or "invalid arguments")
    if record is None:
        typer.echo(f"agent: benchmark failed: {result.error}", err=True)
        finish(EXIT_FAILED)
        return
    if json_output:
        print_json({**record, "warnings": (result.output or {}).get("warnings", [])})
    else:
        print_text(render(record, result))
    every_request_failed = any(level["completed"] == 0 for level in record["metrics"]["levels"])
    finish(EXIT_FAILED if every_request_failed else EXIT_DONE)
