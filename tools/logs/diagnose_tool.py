"""diagnose_log: classify an engine log (see :mod:`tools.logs.diagnose`) as a tool."""

from __future__ import annotations

from typing import ClassVar, get_args

from pydantic import Field

from tools.base import Tool, ToolContext, ToolOutput
from tools.logs.diagnose import Diagnosis, DiagnosisHints
from tools.logs.library import DiagnosisClass
from tools.logs.on_host import diagnose_on_host, readable_log
from tools.logs.tail_tool import LogTarget
from tools.processes import resolve_process
from tools.redact import redact_text


class DiagnoseLogArgs(LogTarget):
    stale_after_seconds: float = Field(
        600.0,
        gt=0,
        description="A log silent this long with NCCL initialisation as its last start-up step counts as an NCCL hang.",
    )


class DiagnoseLogOutput(Diagnosis, ToolOutput):
    """The diagnosis itself: {"class", "confidence", "line_number", "key_line", "remedies", "engine", ...}."""


def hints_for(
    context: ToolContext, process: str | None, path_given: bool, stale_after_seconds: float = 600.0
) -> DiagnosisHints:
    """What the state knows that the log does not: interconnect, engine, and how the process ended."""
    hints = DiagnosisHints(interconnect=context.state.environment.interconnect, stale_after_seconds=stale_after_seconds)
    if path_given:
        return hints
    record = resolve_process(context.state, process, kind=None if process else "engine")
    engine = record.config.get("engine")
    if engine in ("sglang", "vllm"):
        hints.engine = engine
    if record.state != "stopped":  # an exit the agent caused is not a failure
        status = context.host_of(record).status(record.pid, record.create_time)
        hints.process_alive = status.alive
        hints.exit_code = None if status.alive else status.exit_code
    return hints


class DiagnoseLogTool(Tool[DiagnoseLogArgs, DiagnoseLogOutput]):
    name = "diagnose_log"
    description = (
        f"Classify an engine log into one of: {', '.join(get_args(DiagnosisClass))}. "
        "Returns the most telling line with its "
        "number, the root cause (exception, message, failing component, frames), the start-up phase reached, "
        "a calibrated confidence, concrete remedies and the engine's own advice (engine_hints), each with a "
        "machine-usable action. Reads only a bounded head and tail of the log."
    )
    args_model = DiagnoseLogArgs
    output_model = DiagnoseLogOutput
    timeout_seconds: ClassVar[float] = 60.0

    def run(self, args: DiagnoseLogArgs, context: ToolContext) -> DiagnoseLogOutput:
        hints = hints_for(context, args.process, bool(args.path), args.stale_after_seconds)
        host, shown = args.resolve(context)
        with readable_log(host, shown, context) as path:
            diagnosis = diagnose_on_host(host, path, hints)
        diagnosis.log_path = shown  # not the name it was read by (an open descriptor's)
        if diagnosis.key_line is not None:
            diagnosis.key_line = redact_text(diagnosis.key_line)
        diagnosis.evidence = [redact_text(line) for line in diagnosis.evidence]
        if diagnosis.root_cause is not None:
            diagnosis.root_cause.message = redact_text(diagnosis.root_cause.message)
        for hint in diagnosis.engine_hints:
            hint.evidence = redact_text(hint.evidence)
        return DiagnoseLogOutput.model_validate(diagnosis.model_dump(by_alias=True))
