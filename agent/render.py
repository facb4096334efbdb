"""The state document as Markdown that reads like an engineer's hand-over note (``agent status``),
and the short report printed when a run stops."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.escalation import answer_command, resume_command
from agent.state import ProjectState, Question
from tools.bench.runner import LevelReport
from tools.records import BenchmarkRecord, Task

MAX_FINDINGS = 30
MAX_METRIC_COLUMNS = 8


MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|!])")


def one_line(text: str) -> str:
    """Text from outside (a goal) as one line of plain Markdown: line breaks become spaces and the characters
    that would make a heading, a link, emphasis or HTML are escaped."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def render_status(state: ProjectState, state_dir: Path, holder_pid: int | None = None) -> str:
    """The full hand-over note."""
    running = f" (agent PID {holder_pid} is running it now)" if holder_pid else ""
    if state.status == "running" and not holder_pid:
        running = f" (but no agent is running it: it stopped unexpectedly; `{resume_command(state_dir)}`)"
    sections = [
        f"# {one_line(state.goal)}",
        f"Run `{state.run_id}`: **{state.status}**{running} at step {state.step}, policy "
        f"{state.policy or state.run.policy or 'not chosen yet'}; started {state.created_at}, "
        f"updated {state.updated_at}.",
    ]
    if state.summary:
        sections += ["## Outcome", state.summary]
    sections += ["## Hardware", _hardware(state), "## Software", _software(state), "## Model", _model(state)]
    sections += ["## What was tried and what happened", _findings(state, state_dir)]
    if state.tasks:
        sections += ["## Tasks", "\n".join(_task_line(task) for task in state.tasks)]
    sections += ["## What runs now", _processes(state)]
    if state.benchmarks:
        sections += ["## Benchmarks", benchmark_table(state.benchmarks)]
    if state.patches:
        patches = [
            f"- `{patch.id}` {patch.path}" + (" (reverted)" if patch.reverted else "") for patch in state.patches
        ]
        sections += ["## Patches", "\n".join(patches)]
    sections += ["## Open questions", _questions(state, state_dir)]
    sections += ["## Next steps", "\n".join(f"1. {step}" for step in state.next_steps) or "None recorded."]
    sections += ["## Budget", _budget(state)]
    return "\n\n".join(sections) + "\n"


def render_report(state: ProjectState, state_dir: Path) -> str:
    """What a run prints when it stops: the outcome, the open question, and what to do next."""
    report = f"; report with charts: {report_command(state_dir)}" if state.status == "done" else ""
    lines = [
        f"{state.status.upper()}: {one_line(state.goal)} (run {state.run_id}, {state.step} steps, "
        f"{state.usage.wall_seconds:.0f} s, ${state.usage.cost_usd:.2f}){report}"
    ]
    if state.summary:
        lines += ["", state.summary]
    if state.benchmarks:
        lines += ["", benchmark_table(state.benchmarks)]
    for question in state.pending_questions():
        lines += ["", render_question(question, state_dir)]
    if state.status in ("failed", "running") and state.findings:
        lines += ["", f"Last finding: {state.findings[-1].summary}", f"Resume: {resume_command(state_dir)}"]
    lines += ["", f"Full hand-over: agent status {state_dir}"]
    return "\n".join(lines) + "\n"


def report_command(state_dir: Path) -> str:
    """The command that writes a run's report with its charts (named by the DONE line)."""
    return f"agent report {shlex.quote(str(state_dir))} --html {shlex.quote(str(state_dir / 'report.html'))}"


def benchmark_table(benchmarks: list[BenchmarkRecord]) -> str:
    """The measured figures, one row per load level of each run_bench record; records of other shapes
    (figures given as plain metrics) in a table of their own."""
    measured = [(record, level) for record in benchmarks for level in _levels(record)]
    plain = [record for record in benchmarks if not record.metrics.get("levels")]
    tables = [_level_table(measured)] if measured else []
    return "\n\n".join([*tables, _metric_table(plain)] if plain else tables)


def _levels(record: BenchmarkRecord) -> list[LevelReport]:
    levels = []
    for raw in record.metrics.get("levels") or []:
        try:
            levels.append(LevelReport.model_validate(raw))
        except ValidationError:
            continue
    return levels


def _level_table(measured: list[tuple[BenchmarkRecord, LevelReport]]) -> str:
    rows = [
        "| benchmark | concurrency | completed | output tok/s | TTFT p50 / p99 ms | ITL p50 / p99 ms | accept length |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for record, level in measured:
        accept = level.spec.accept_length if level.spec else None
        rows.append(
            f"| {record.label} (`{record.id}`) | {level.concurrency} | {level.completed}/{level.num_requests} | "
            f"{level.output_throughput:.1f} | {_fixed(level.ttft_ms.median)} / {_fixed(level.ttft_ms.p99)} | "
            f"{_fixed(level.itl_ms.median)} / {_fixed(level.itl_ms.p99)} | {_fixed(accept, 2)} |"
        )
    return "\n".join(rows)


def _metric_table(benchmarks: list[BenchmarkRecord]) -> str:
    columns: list[str] = []
    for record in benchmarks:
        for key, value in record.metrics.items():
            if isinstance(value, int | float | str) and key not in columns:
                columns.append(key)
    columns = columns[:MAX_METRIC_COLUMNS]
    rows = ["| benchmark | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for record in benchmarks:
        cells = [_cell(record.metrics.get(column)) for column in columns]
        rows.append(f"| {record.label} (`{record.id}`) | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _fixed(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _task_line(task: Task) -> str:
    mark = "x" if task.status == "done" else " "
    notes = f": {task.notes}" if task.notes else ""
    return f"- [{mark}] {task.title} (`{task.id}`, {task.status}){notes}"


def _hardware(state: ProjectState) -> str:
    environment = state.environment
    if not environment.probed_at and not environment.gpus:
        return "Not probed yet."
    lines = [
        f"- GPU {gpu.index}: {gpu.name}, compute capability {gpu.compute_capability or '?'}, "
        f"{gpu.memory_total_mib / 1024:.0f} GiB"
        for gpu in environment.gpus
    ]
    if environment.gpu_probe_error:
        lines.append(f"- GPU probe: {environment.gpu_probe_error}")
    lines.append(
        f"- Interconnect: {environment.interconnect}; driver {environment.driver_version or '?'}, "
        f"CUDA {environment.cuda_version or '?'}"
    )
    lines.append(
        f"- CPU: {environment.cpu_model or '?'} ({environment.cpu_cores or '?'} cores), RAM "
        f"{environment.ram_gib or '?'} GiB, free disk {environment.disk_free_gib or '?'} GiB"
    )
    scenario = state.run.simulated_scenario
    if scenario:
        lines.append(f"- Simulated host: scenario {scenario}")
    return "\n".join(lines)


def _software(state: ProjectState) -> str:
    environment = state.environment
    lines = [f"- Engine Python: {environment.engine_python}"] if environment.engine_python else []
    packages = sorted(environment.packages.items())
    lines += [f"- {name}: {version or 'not installed'}" for name, version in packages]
    return "\n".join(lines) or "Not probed yet."


def _model(state: ProjectState) -> str:
    model = state.model
    size = f"{model.size_gib} GiB" if model.size_gib else None
    facts = {
        "name": model.name,
        "path": model.path,
        "size": size,
        "architecture": model.architecture,
        "layers": model.num_layers,
        "experts": model.num_experts,
        "attention": model.attention,
        "quantization": model.quantization,
    }
    known = [f"- {key}: {value}" for key, value in facts.items() if value is not None]
    return "\n".join(known) or "Not known yet."


def _findings(state: ProjectState, state_dir: Path) -> str:
    if not state.findings:
        return "Nothing yet."
    pinned = [finding for finding in state.findings if finding.pinned]
    recent = [finding for finding in state.findings if not finding.pinned][-MAX_FINDINGS:]
    lines = [_history_line(state, state_dir)] if state.history.moved else []
    for finding in [*pinned, *recent]:
        lines.append(f"- step {finding.step}{' (pinned)' if finding.pinned else ''}: {finding.summary}")
        lines += [f"    - `{item}`" for item in finding.evidence[:3]]
    return "\n".join(lines)


def _history_line(state: ProjectState, state_dir: Path) -> str:
    """Where the history the document no longer holds is: the journal's ``history`` records."""
    moved = ", ".join(f"{count} {name}" for name, count in sorted(state.history.moved.items()))
    return (
        f"(Earlier history, {moved}, is in `{state_dir / state.history.journal}`, as records of kind "
        "`history`; this note holds pinned findings and the most recent ones.)"
    )


def _processes(state: ProjectState) -> str:
    live = [record for record in state.processes if record.state not in ("exited", "stopped")]
    if not live:
        return "Nothing the agent started is running."
    return "\n".join(
        f"- {record.name} ({record.kind}): {record.state}, PID {record.pid}"
        f"{f', port {record.port}' if record.port else ''}, log `{record.log_path}`"
        for record in live
    )


def render_question(question: Question, state_dir: Path) -> str:
    """One pending question with its evidence and the commands that answer it."""
    lines = [f"**{question.id}** ({question.kind}): {question.question}"]
    if question.context:
        lines.append(f"  Context: {question.context}")
    lines += [f"  - evidence: `{item}`" for item in question.evidence]
    if question.hypothesis:
        lines.append(f"  Best hypothesis: {question.hypothesis}")
    if question.options:
        lines.append(f"  Options: {' | '.join(question.options)}")
    answer = answer_command(state_dir, question.id, question.approval_word is not None)
    lines.append(f"  Answer: `{answer}` then `{resume_command(state_dir)}`")
    return "\n".join(lines)


def _questions(state: ProjectState, state_dir: Path) -> str:
    pending = state.pending_questions()
    answered = [question for question in state.questions if question.answer is not None][-5:]
    lines = [render_question(question, state_dir) for question in pending] or ["None."]
    lines += [f"- answered {question.id}: {question.question} -> {question.answer}" for question in answered]
    return "\n".join(lines)


def _budget(state: ProjectState) -> str:
    usage, limits = state.usage, state.limits
    return (
        f"{state.step} of {limits.max_steps} steps, {usage.wall_seconds:.0f} of "
        f"{limits.max_wall_seconds:.0f} s, ${usage.cost_usd:.2f} of ${limits.max_cost_usd:.2f}; "
        f"{usage.model_calls} model calls, {usage.input_tokens} input / {usage.output_tokens} "
        "output tokens."
    )
