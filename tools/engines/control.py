"""stop_engine and engine_status for engines started by launch_engine."""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput
from tools.engines.config import EngineLaunchConfig
from tools.engines.health import agent_url, base_url, check_health
from tools.engines.readiness import ReadinessReport, WaitSettings, wait_for_ready
from tools.logs.diagnose import Diagnosis, DiagnosisHints
from tools.logs.kernel import engine_oom_kills
from tools.logs.on_host import diagnose_on_host
from tools.logs.reader import last_frame
from tools.processes import DEFAULT_STOP_GRACE_SECONDS, group_members, resolve_process, stop_process
from tools.records import ProcessRecord
from tools.redact import redact_text


class EngineName(ToolArgs):
    name: str | None = Field(None, description="Engine process name; default: the newest engine.")


class StopEngineArgs(EngineName):
    grace_seconds: float = Field(
        DEFAULT_STOP_GRACE_SECONDS, ge=0, le=600, description="Seconds between SIGTERM and SIGKILL."
    )


class StopEngineOutput(ToolOutput):
    name: str
    pid: int
    was_alive: bool
    sent_sigterm: bool
    sent_sigkill: bool
    stopped: bool
    exit_code: int | None
    message: str


class StopEngineTool(Tool[StopEngineArgs, StopEngineOutput]):
    name = "stop_engine"
    description = (
        "Stop an engine this agent started: SIGTERM to its process group, SIGKILL after the grace "
        "period. Never touches a process whose PID was reused."
    )
    args_model = StopEngineArgs
    output_model = StopEngineOutput

    def timeout_for(self, args: StopEngineArgs) -> float:
        return args.grace_seconds + 60.0

    def run(self, args: StopEngineArgs, context: ToolContext) -> StopEngineOutput:
        record = resolve_process(context.state, args.name, kind="engine")
        outcome = stop_process(record, context.host_of(record), grace_seconds=args.grace_seconds)
        context.progress(f"{record.name}: {outcome.message}")
        for rank in group_members(context.state, record):  # the other ranks of a multi-node engine
            stopped = stop_process(rank, context.host_of(rank), grace_seconds=args.grace_seconds)
            context.progress(f"{rank.name}: {stopped.message}")
        return StopEngineOutput(**outcome.model_dump())


class EngineStatusArgs(EngineName):
    tail_lines: int = Field(5, ge=0, le=200, description="How many last log lines to include.")
    wait_ready_seconds: float | None = Field(
        None,
        gt=0,
        le=7 * 24 * 3600,
        description="Keep watching a starting engine, as launch_engine does, until it is ready, dies or hangs: "
        "at least this long, longer while its measured loading rate says it will finish. Omitted: a snapshot.",
    )


class EngineStatusOutput(ToolOutput):
    name: str
    pid: int
    state: str
    alive: bool
    exit_code: int | None = None
    port: int | None = None
    base_url: str | None = Field(None, description="Where the agent reaches the server (benchmarks, checks).")
    host_base_url: str | None = Field(None, description="The server's URL on its own host.")
    uptime_seconds: float | None = None
    cpu_seconds: float | None = None
    read_bytes: int | None = None
    rss_bytes: int | None = None
    gpu_memory_used_mib: list[int] | None = None
    health: str | None = None
    log_path: str
    last_lines: list[str] = Field(default_factory=list)
    diagnosis: Diagnosis | None = None
    readiness: ReadinessReport | None = None  # when asked to wait: what the watcher saw


def _uptime(record: ProcessRecord) -> float | None:
    try:
        started = dt.datetime.fromisoformat(record.started_at)
    except ValueError:
        return None
    return round((dt.datetime.now(dt.UTC) - started).total_seconds(), 1)


class EngineStatusTool(Tool[EngineStatusArgs, EngineStatusOutput]):
    name = "engine_status"
    description = (
        "State of a launched engine: alive or exit code, CPU/IO/memory counters, GPU memory, a "
        "/health check, its last log lines, and a log diagnosis when it is not serving."
    )
    args_model = EngineStatusArgs
    output_model = EngineStatusOutput
    timeout_seconds: ClassVar[float] = 60.0

    def timeout_for(self, args: EngineStatusArgs) -> float:
        return 60.0 if args.wait_ready_seconds is None else 24 * 3600.0 + args.wait_ready_seconds

    def run(self, args: EngineStatusArgs, context: ToolContext) -> EngineStatusOutput:
        record = resolve_process(context.state, args.name, kind="engine")
        readiness = _wait(record, args, context)
        host = context.host_of(record)
        status = host.status(record.pid, record.create_time)
        output = EngineStatusOutput(
            name=record.name,
            pid=record.pid,
            state=record.state,
            alive=status.alive,
            port=record.port,
            uptime_seconds=_uptime(record),
            log_path=record.log_path,
            cpu_seconds=status.cpu_seconds,
            read_bytes=status.read_bytes,
            rss_bytes=status.rss_bytes,
            gpu_memory_used_mib=host.gpu_memory_used_mib(),
        )
        log = record.log_path
        has_log = host.file_facts(log) is not None
        if args.tail_lines and has_log:
            lines = host.read_last_lines(log, args.tail_lines, max_bytes=8 * 1024 * 1024).lines
            output.last_lines = [redact_text(last_frame(line)) for line in lines]
        serving = False
        config = _recorded_config(record)
        if config is not None:
            output.base_url, output.host_base_url = agent_url(host, config), base_url(config)
        if status.alive and config is not None:
            health = check_health(host, config)
            output.health = health.describe()
            serving = health.ok
            if serving and record.state in ("starting", "loading", "hung", "unknown"):
                record.state = "ready"
        elif not status.alive and record.state not in ("exited", "stopped"):
            record.state = "exited"
            record.exit_code = status.exit_code
        output.state = record.state
        output.exit_code = None if status.alive else status.exit_code
        if not serving and has_log:
            hints = DiagnosisHints(
                engine=config.engine if config else None,
                process_alive=status.alive,
                interconnect=context.state.environment.interconnect,
                exit_code=None if record.state == "stopped" else output.exit_code,
                kernel_lines=[] if status.alive else engine_oom_kills(host, [record.pid], log),
            )
            output.diagnosis = diagnose_on_host(host, log, hints)
        output.readiness = readiness
        return output


def _wait(record: ProcessRecord, args: EngineStatusArgs, context: ToolContext) -> ReadinessReport | None:
    """With ``wait_ready_seconds``: watch a live, not yet serving engine with the launch watcher."""
    config = _recorded_config(record)
    if args.wait_ready_seconds is None or config is None or record.state in ("ready", "exited", "stopped"):
        return None
    if not context.host_of(record).status(record.pid, record.create_time).alive:
        return None
    settings = WaitSettings(
        wait_timeout_seconds=args.wait_ready_seconds,
        hang_after_seconds=context.settings.hang_after_seconds,
        poll_seconds=min(2.0, max(0.05, context.settings.hang_after_seconds / 10)),
        health_every_seconds=min(10.0, max(0.1, context.settings.hang_after_seconds / 5)),
        started_ago_seconds=max(0.0, _uptime(record) or 0.0),
    )
    context.progress(f"{record.name}: watching the start-up for at least {args.wait_ready_seconds:.0f} s more")
    return wait_for_ready(record, config, context, settings, peers=group_members(context.state, record))


def _recorded_config(record: ProcessRecord) -> EngineLaunchConfig | None:
    fields = EngineLaunchConfig.model_fields
    try:
        return EngineLaunchConfig.model_validate({key: value for key, value in record.config.items() if key in fields})
    except ValueError:
        return None
