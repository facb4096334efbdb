"""What launch_engine takes and returns, and the steps a single-node and a multi-node launch share: the port
check on the serving host, the waiting settings, and the finding a launch leaves."""

from __future__ import annotations

from pydantic import Field

from tools.base import ToolArgs, ToolContext, ToolError, ToolOutput
from tools.engines.command import VersionChoice
from tools.engines.config import EngineLaunchConfig
from tools.engines.readiness import RankReport, ReadinessReport, WaitSettings
from tools.hosts.base import Host
from tools.processes import live_processes


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
        description="Give up waiting after exactly this long (the engine keeps running). Default: progress "
        "decides: the configured load timeout (30 min) until the weight load shows a rate, then the time "
        "that rate needs with a 50% margin, so a slow load that keeps progressing is waited for.",
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
    node_env: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Multi-node: extra environment per host name, e.g. each node's NCCL_SOCKET_IFNAME "
        "(check_nodes proposes them in cluster.node_env).",
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
    ranks: list[RankReport] = Field(default_factory=list, description="Multi-node: every rank, node 0 first.")


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


def wait_settings(args: LaunchEngineArgs, context: ToolContext) -> WaitSettings:
    return WaitSettings(
        wait_timeout_seconds=args.wait_timeout_seconds or context.settings.load_timeout_seconds,
        hang_after_seconds=args.hang_after_seconds or context.settings.hang_after_seconds,
        poll_seconds=args.poll_seconds,
        health_every_seconds=args.health_every_seconds,
        fixed_deadline=args.wait_timeout_seconds is not None,
    )


def record_finding(name: str, config: EngineLaunchConfig, readiness: ReadinessReport, context: ToolContext) -> None:
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
