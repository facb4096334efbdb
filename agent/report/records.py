"""What a report is made of, gathered from the state document and the whole journal.

The document holds only recent entries (schema 2); the journal holds the rest, so the report reads
both: every benchmark (the document's and those moved out in ``history`` records), every
``launch_engine`` call with its readiness verdict and diagnosis (its ``intent`` and ``result``
records, whoever made the call: a policy or an MCP client), and the training curve of each drafter
(its log, else the ``drafter_status`` snapshots the journal kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent.history import HISTORY_KIND
from agent.journal import Journal
from agent.state import ProjectState
from tools.drafter.progress import STEP_LINE, parse_metrics
from tools.records import BenchmarkRecord, ProcessRecord


class LaunchAttempt(BaseModel):
    number: int
    process: str | None
    config: dict[str, Any] = Field(default_factory=dict)  # the launch configuration, as the call gave it
    outcome: str  # the readiness verdict (ready, exited, hung, timeout...), or "refused"
    diagnosis: str | None = None  # the diagnosed class of a failed start
    key_line: str | None = None  # the telling log line
    suggested: list[str] = Field(default_factory=list)  # the diagnosis's remedies, in words
    error: str | None = None  # why launch_engine refused before starting anything


class TrainingPoint(BaseModel):
    step: int
    loss: float | None = None
    accuracy: float | None = None
    acceptance_rate: float | None = None


class TrainingCurve(BaseModel):
    name: str
    points: list[TrainingPoint]


class RunRecords(BaseModel):
    state: ProjectState
    benchmarks: list[BenchmarkRecord]
    launches: list[LaunchAttempt]
    training: list[TrainingCurve]


def gather(state: ProjectState, state_dir: Path) -> RunRecords:
    entries = Journal(state_dir / state.history.journal).records()
    moved = [entry for entry in entries if entry.get("kind") == HISTORY_KIND]
    return RunRecords(
        state=state,
        benchmarks=_benchmarks(state, moved),
        launches=_launches(entries),
        training=_training(state, moved, entries),
    )


def _moved_records(moved: list[dict[str, Any]], name: str, model: type[Any]) -> list[Any]:
    found = []
    for entry in moved:
        for item in entry.get(name) or []:
            try:
                found.append(model.model_validate(item))
            except ValidationError:
                continue  # a record this version cannot read is left out of the report, not fatal
    return found


def _benchmarks(state: ProjectState, moved: list[dict[str, Any]]) -> list[BenchmarkRecord]:
    by_id = {record.id: record for record in _moved_records(moved, "benchmarks", BenchmarkRecord)}
    by_id.update({record.id: record for record in state.benchmarks})
    return sorted(by_id.values(), key=lambda record: record.at)


def _launches(entries: list[dict[str, Any]]) -> list[LaunchAttempt]:
    intents = {
        (entry.get("step"), entry.get("call_id")): entry
        for entry in entries
        if entry.get("kind") == "intent" and entry.get("tool") == "launch_engine"
    }
    attempts: list[LaunchAttempt] = []
    for entry in entries:
        if entry.get("kind") != "result" or entry.get("tool") != "launch_engine":
            continue
        intent = intents.get((entry.get("step"), entry.get("call_id")), {})
        arguments = intent.get("arguments")
        config = arguments.get("config") if isinstance(arguments, dict) else None
        attempts.append(_attempt(len(attempts) + 1, config if isinstance(config, dict) else {}, entry))
    return attempts


def _attempt(number: int, config: dict[str, Any], entry: dict[str, Any]) -> LaunchAttempt:
    result = entry.get("result") or {}
    output = result.get("output") or {}
    if not result.get("ok"):
        return LaunchAttempt(number=number, process=None, config=config, outcome="refused", error=result.get("error"))
    readiness = output.get("readiness") or {}
    diagnosis = readiness.get("diagnosis") or {}
    outcome = str(readiness.get("outcome") or "unknown")
    failed = outcome != "ready"
    return LaunchAttempt(
        number=number,
        process=output.get("name"),
        config=config,
        outcome=outcome,
        diagnosis=diagnosis.get("class") if failed else None,
        key_line=diagnosis.get("key_line") if failed else None,
        suggested=[str(item.get("text")) for item in diagnosis.get("remedies") or [] if item.get("text")]
        if failed
        else [],
    )


def _training(state: ProjectState, moved: list[dict[str, Any]], entries: list[dict[str, Any]]) -> list[TrainingCurve]:
    jobs: dict[str, ProcessRecord] = {}
    for record in [*_moved_records(moved, "processes", ProcessRecord), *state.processes]:
        if record.kind == "drafter_training":
            jobs[record.name] = record
    curves = []
    for name, record in jobs.items():
        points = _points_from_log(Path(record.log_path)) or _points_from_journal(name, entries)
        if points:
            curves.append(TrainingCurve(name=name, points=points))
    return curves


def _points_from_log(path: Path) -> list[TrainingPoint]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    points: dict[int, TrainingPoint] = {}
    for line in lines:
        match = STEP_LINE.match(line.strip())
        metrics = parse_metrics(match.group(2)) if match else None
        if match is None or metrics is None or any(key.startswith("eval/") for key in metrics):
            continue
        step = int(match.group(1))
        points[step] = TrainingPoint(
            step=step,
            loss=_number(metrics.get("loss")),
            accuracy=_number(metrics.get("acc")),
            acceptance_rate=_number(metrics.get("acceptance_rate")),
        )
    return [points[step] for step in sorted(points)]


def _points_from_journal(name: str, entries: list[dict[str, Any]]) -> list[TrainingPoint]:
    points: dict[int, TrainingPoint] = {}
    for entry in entries:
        if entry.get("kind") != "result" or entry.get("tool") != "drafter_status":
            continue
        output = (entry.get("result") or {}).get("output") or {}
        progress = output.get("progress") or {}
        if output.get("name") == name and isinstance(progress.get("step"), int):
            points[progress["step"]] = TrainingPoint(
                step=progress["step"],
                loss=_number(progress.get("loss")),
                accuracy=_number(progress.get("accuracy")),
                acceptance_rate=_number(progress.get("acceptance_rate")),
            )
    return [points[step] for step in sorted(points)]


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
