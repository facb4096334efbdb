"""launch_engine: build the flags for the installed release, start the engine detached, wait for ready."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.engines.build import build_command, known_flags
from tools.engines.command import EngineCommand, FlagError, FlagsUnknown, VersionChoice
from tools.engines.config import EngineLaunchConfig
from tools.engines.health import agent_url, base_url
from tools.engines.help_probe import read_help_flags
from tools.engines.readiness import ReadinessReport, WaitSettings, wait_for_ready
from tools.hosts.base import Host
from tools.probe import engine_versions
from tools.processes import live_processes, start_process


class LaunchEngineArgs(ToolArgs):
    config: EngineLaunchConfig
    name: str = Field("engine", min_length=1, max_length=64, description="Name of the managed process.")
    engine_version: str | None = Field(
        None,
        description="Installed engine release; default: from the last "
        "probe_system, else read from the engine environment.",
    )
    wait: bool = Field(True, description="Wait for readiness; false returns right after the start.")
    wait_timeout_seconds: float | None = Field(
        None,
        gt=0,
        description="Give up waiting after this long "
        "(the engine keeps running). Default: the configured load "
        "timeout (30 min), since large MoE models load for 7-20 min.",
    )
    hang_after_seconds: float | None = Field(
        None,
        gt=0,
        description="Call it hung after this long with no "
        "log output, CPU/IO activity or GPU-memory change. Default 600.",
    )
    poll_seconds: float = Field(2.0, ge=0.05, le=60)
    health_every_seconds: float = Field(10.0, ge=0.1, le=300)
    dry_run: bool = Field(
        False,
        description="Only build the command (argv, environment, entry point, and the "
        "reason for each version-dependent choice); start nothing.",
    )
    compute_capability: str | None = Field(
        None,
        pattern=r"^\d+\.\d+$",
        description="GPU compute capability (e.g. 12.0); default: from the last probe_system.",
    )


class LaunchEngineOutput(ToolOutput):
    name: str
    dry_run: bool = False
    pid: int | None = None
    log_path: str | None = None
    base_url: str = Field(description="Where the agent reaches the server (benchmarks, checks).")
    host_base_url: str = Field("", description="The server's URL on its own host (for programs run there).")
    argv: list[str]
    env: dict[str, str]
    entry_point: str = ""
    engine_version: str | None
    flags_from: str = ""
    choices: list[VersionChoice] = Field(default_factory=list)
    notes: list[str]
    readiness: ReadinessReport


def _engine_version(args: LaunchEngineArgs, context: ToolContext) -> str | None:
    engine = args.config.engine
    if args.engine_version:
        return args.engine_version
    known = context.state.environment.packages.get(engine)
    if known:
        return known
    found = engine_versions(context.host, context.settings.engine_python).get(engine)
    if found:
        context.state.environment.packages[engine] = found
    return found


def check_port_free(config: EngineLaunchConfig, context: ToolContext, host: Host) -> None:
    """ToolError when an engine of ours or another program already serves the port on ``host``."""
    port = config.effective_port
    for record in live_processes(context.state, kind="engine"):
        if (
            record.port == port
            and context.host_of(record) is host
            and host.status(record.pid, record.create_time).alive
        ):
            raise ToolError(
                f"engine {record.name!r} (pid {record.pid}) already serves port {port}; "
                "stop it with stop_engine or choose another port"
            )
    # A server this agent did not start may hold the port; its /health would then pass for ours. Asked on the
    # host itself: through an SSH forward every port would seem to answer.
    if host.connect_error(config.probe_host, port, timeout=0.5) is None:
        where = "" if host is context.host else f" on {host.name}"
        raise ToolError(
            f"{PORT_IN_USE}: {config.probe_host}:{port}{where} already accepts connections from a "
            "process this agent did not start; launch on a free port, or find the owner "
            "(ss -ltnp) and ask before stopping it"
        )


PORT_IN_USE = "port_in_use"


class LaunchEngineTool(Tool[LaunchEngineArgs, LaunchEngineOutput]):
    name = "launch_engine"
    blocks = (
        "until the engine answers /health, dies or hangs, at most wait_timeout_seconds (default "
        "1800 s: large MoE models load for 7-20 min); wait=false returns right after the start."
    )
    description = (
        "Launch SGLang or vLLM with a typed config (model, tp/ep/dp, port, memory fraction, attention "
        "backend, CUDA-graph options, EAGLE-3 speculative options, multi-node, extra flags, env such as "
        "NCCL_*). Flags are built for the installed engine release (from the release data, or read from the "
        "engine's --help for unknown or development builds); a feature the release lacks is refused with the "
        "reason. Waits until /health answers, reporting loading progress; returns early with a log diagnosis "
        "if the engine dies or hangs. dry_run: only return the argv, environment and entry point, with the "
        "reason for each version-dependent choice."
    )
    args_model = LaunchEngineArgs
    output_model = LaunchEngineOutput

    def timeout_for(self, args: LaunchEngineArgs) -> float:
        # The wait loop keeps its own deadline (which may come from the config); this is a backstop.
        return (args.wait_timeout_seconds or 4 * 3600.0) + 300.0 if args.wait else 300.0

    def run(self, args: LaunchEngineArgs, context: ToolContext) -> LaunchEngineOutput:
        config = args.config
        if config.nnodes > 1 and not args.dry_run:
            from tools.cluster.launch import launch_across_nodes  # the multi-node route (several hosts)

            return launch_across_nodes(self, args, context)
        if not args.dry_run:
            check_port_free(config, context, context.host)
        version = _engine_version(args, context)
        command = plan_command(args, context, version)
        if args.dry_run:
            return LaunchEngineOutput(
                name=args.name,
                dry_run=True,
                base_url=base_url(config),
                argv=command.argv,
                env=command.env,
                entry_point=command.entry_point,
                engine_version=version,
                flags_from=command.flags_from,
                choices=command.choices,
                notes=command.notes,
                readiness=ReadinessReport(outcome="dry_run"),
            )
        recorded: dict[str, Any] = {**config.model_dump(mode="json"), "engine_version": version, "notes": command.notes}
        record = start_process(
            context,
            name=args.name,
            argv=command.argv,
            env=command.env,
            kind="engine",
            port=config.effective_port,
            config=recorded,
        )
        context.progress(
            f"{args.name}: started {config.engine} {version or ''} (pid {record.pid}); log {record.log_path}"
        )
        if not args.wait:
            readiness = ReadinessReport(outcome="not_waited")
        elif config.node_rank > 0:
            readiness = ReadinessReport(outcome="started")
        else:
            settings = WaitSettings(
                wait_timeout_seconds=args.wait_timeout_seconds or context.settings.load_timeout_seconds,
                hang_after_seconds=args.hang_after_seconds or context.settings.hang_after_seconds,
                poll_seconds=args.poll_seconds,
                health_every_seconds=args.health_every_seconds,
            )
            readiness = wait_for_ready(record, config, context, settings)
        _record_finding(args.name, config, readiness, context)
        return LaunchEngineOutput(
            name=args.name,
            pid=record.pid,
            log_path=record.log_path,
            base_url=agent_url(context.host, config),
            host_base_url=base_url(config),
            argv=record.argv,
            env=record.env,
            entry_point=command.entry_point,
            engine_version=version,
            flags_from=command.flags_from,
            choices=command.choices,
            notes=command.notes,
            readiness=readiness,
        )


def _compute_capability(args: LaunchEngineArgs, context: ToolContext) -> str | None:
    if args.compute_capability:
        return args.compute_capability
    gpus = context.state.environment.gpus
    return next((gpu.compute_capability for gpu in gpus if gpu.compute_capability), None)


def plan_command(args: LaunchEngineArgs, context: ToolContext, version: str | None) -> EngineCommand:
    """The command for the installed release: flags from the release data, else from the engine's --help."""
    engine, python = args.config.engine, context.settings.engine_python
    try:
        try:
            flags = known_flags(engine, version)
        except FlagsUnknown as unknown:
            context.progress(f"{unknown}; reading them from the installed engine")
            try:
                flags = read_help_flags(context.host, engine, python, version, context.state_dir / "cache")
            except FlagsUnknown as unreadable:
                raise FlagError(f"{unknown}, and {unreadable}") from None
        return build_command(args.config, python, version, flags, _compute_capability(args, context))
    except FlagError as error:
        raise ToolError(str(error)) from None


def _record_finding(name: str, config: EngineLaunchConfig, readiness: ReadinessReport, context: ToolContext) -> None:
    where = f"{config.engine} on port {config.effective_port}"
    if readiness.outcome == "ready":
        context.state.add_finding(
            f"{name}: {where} ready after {readiness.waited_seconds:.0f} s", evidence=readiness.milestones[-3:]
        )
    elif readiness.outcome in ("exited", "hung") and readiness.diagnosis is not None:
        diagnosis = readiness.diagnosis
        context.state.add_finding(
            f"{name}: {where} {readiness.outcome} during start-up: {diagnosis.diagnosis_class} "
            f"(confidence {diagnosis.confidence})",
            evidence=[f"line {diagnosis.line_number}: {diagnosis.key_line}"],
        )
