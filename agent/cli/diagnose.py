"""``agent diagnose LOGFILE``: classify an engine log and print the telling line and remedies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.app import app
from agent.cli.common import JsonOption, print_json, usage_errors
from agent.events import UsageError
from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_file


def render(diagnosis: Diagnosis) -> str:
    where = (
        f"line {diagnosis.line_number}"
        if diagnosis.line_number is not None
        else (f"{diagnosis.lines_from_end} lines from the end" if diagnosis.lines_from_end else "")
    )
    heading = f"{diagnosis.diagnosis_class} (confidence {diagnosis.confidence:.2f}, engine {diagnosis.engine})"
    lines = [heading, diagnosis.summary]
    if diagnosis.key_line is not None:
        lines.append(f"{where}: {diagnosis.key_line}")
    root = diagnosis.root_cause
    if root is not None:
        frame = f" in {root.frames[0].function} ({root.frames[0].file})" if root.frames else ""
        lines.append(
            f"root cause: {root.type or 'traceback'}{': ' + root.message[:160] if root.message else ''}"
            f"{frame}; component {root.component or 'unknown'}"
        )
    lines.append(f"phase reached: {diagnosis.phase}" + (f" ({diagnosis.progress})" if diagnosis.progress else ""))
    if diagnosis.decided_by == "model":
        lines.append("decided by: the learned model (no rule explains the error)")
    if diagnosis.findings:
        lines.append(f"findings: {', '.join(diagnosis.findings)}")
    if diagnosis.lines_around:
        lines += ["lines around it:", *[f"  {line}" for line in diagnosis.lines_around]]
    for alternative in diagnosis.alternatives:
        lines.append(f"also possible: {alternative.diagnosis_class} ({alternative.confidence:.2f}): {alternative.why}")
    for hint in diagnosis.engine_hints:
        lines.append(f"engine says: {hint.evidence[:160]}  {json.dumps(hint.action)}")
    for number, remedy in enumerate(diagnosis.remedies, start=1):
        action = f"  {json.dumps(remedy.action)}" if remedy.action else ""
        lines.append(f"{number}. {remedy.text}{action}")
    return "\n".join(lines) + "\n"


@app.command()
def diagnose(
    logfile: Annotated[Path, typer.Argument(help="An engine log file.")],
    stale_after_seconds: Annotated[
        float,
        typer.Option(help="A log silent this long with NCCL initialisation as its last start-up step is an NCCL hang."),
    ] = 600.0,
    exit_code: Annotated[
        int | None,
        typer.Option(
            "--exit-code",
            help="How the engine's process ended (negative: killed by that signal, e.g. -9; 137 = 128 + 9). Given, "
            "the process counts as exited, as engine_status reports it; a log the agent's supervisor wrote ends "
            "with this fact already.",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Classify an engine log (healthy, loading, stopped, nccl_hang, cuda_oom, ...): root cause, start-up phase,
    the engine's own advice, and remedies."""
    with usage_errors():
        if not logfile.is_file():
            raise UsageError(f"{logfile} is not a file")
        hints = DiagnosisHints(
            stale_after_seconds=stale_after_seconds,
            exit_code=exit_code,
            process_alive=False if exit_code is not None else None,
        )
        diagnosis = diagnose_file(logfile, hints)
    if json_output:
        print_json(diagnosis.model_dump(mode="json", by_alias=True))
    else:
        typer.echo(render(diagnosis), nl=False)
