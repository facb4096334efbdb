"""launch_engine with ``nnodes > 1``: one rank per host (node 0 first), readiness from node 0, every rank watched.

The flags of each rank come from the same builders as a single-node launch (the release data decides
``--nnodes/--node-rank/--dist-init-addr`` for SGLang and ``--nnodes/--node-rank/--master-addr/--master-port``
for vLLM releases that have them), with ``node_rank`` set per host; each host's ``node_env`` (its
NCCL_SOCKET_IFNAME from check_nodes) is added to that rank's environment. Ranks above 0 are recorded as
``engine_rank`` processes of the engine's group, so stop_engine stops them with it. A rank that dies ends the
wait with its own log's diagnosis; on a hang or a timeout every rank's log is diagnosed, and the report names
the failing node and rank.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.base import ToolContext, ToolError
from tools.engines.command import EngineCommand
from tools.engines.config import EngineLaunchConfig
from tools.engines.health import agent_url, base_url
from tools.engines.launch_io import LaunchEngineArgs, LaunchEngineOutput, check_port_free, record_finding, wait_settings
from tools.engines.readiness import RankReport, ReadinessReport, wait_for_ready
from tools.hosts.base import Host
from tools.logs.diagnose import DiagnosisHints
from tools.logs.on_host import diagnose_on_host
from tools.processes import start_process
from tools.records import ProcessRecord

HEALTHY = ("healthy", "loading")


def _nodes(config: EngineLaunchConfig, context: ToolContext) -> list[Host]:
    hosts = context.all_hosts()
    if len(hosts) < config.nnodes:
        names = ", ".join(host.name for host in hosts)
        raise ToolError(
            f"nnodes={config.nnodes} needs {config.nnodes} hosts, this run has {len(hosts)} ({names}); "
            "give one --host per node, node 0 first"
        )
    return hosts[: config.nnodes]


def _start_ranks(
    args: LaunchEngineArgs,
    context: ToolContext,
    nodes: list[Host],
    version: str | None,
    plan: Callable[[EngineLaunchConfig], EngineCommand],
) -> tuple[list[ProcessRecord], EngineCommand]:
    records: list[ProcessRecord] = []
    first: EngineCommand | None = None
    for rank, host in enumerate(nodes):
        config = args.config.model_copy(update={"node_rank": rank})
        command = plan(config)
        first = first or command
        recorded: dict[str, Any] = {**config.model_dump(mode="json"), "engine_version": version, "notes": command.notes}
        record = start_process(
            context,
            name=args.name if rank == 0 else f"{args.name}-rank{rank}",
            argv=command.argv,
            env={**command.env, **args.node_env.get(host.name, {})},
            kind="engine" if rank == 0 else "engine_rank",
            port=config.effective_port if rank == 0 else None,
            config=recorded,
            host=host,
            group="" if rank == 0 else args.name,
        )
        context.progress(f"{record.name}: rank {rank} started on {host.name} (pid {record.pid}); log {record.log_path}")
        records.append(record)
    assert first is not None
    return records, first


def _rank_reports(
    records: list[ProcessRecord], config: EngineLaunchConfig, context: ToolContext, stale_after_seconds: float
) -> list[RankReport]:
    reports = []
    for rank, record in enumerate(records):
        host = context.host_of(record)
        status = host.status(record.pid, record.create_time)
        hints = DiagnosisHints(
            engine=config.engine,
            process_alive=status.alive,
            exit_code=None if status.alive else status.exit_code,
            stale_after_seconds=stale_after_seconds,
        )
        diagnosis = diagnose_on_host(host, record.log_path, hints) if host.file_facts(record.log_path) else None
        reports.append(
            RankReport(
                node_rank=rank,
                host=host.name,
                name=record.name,
                pid=record.pid,
                alive=status.alive,
                exit_code=None if status.alive else status.exit_code,
                log_path=record.log_path,
                diagnosis_class=diagnosis.diagnosis_class if diagnosis else None,
                key_line=diagnosis.key_line if diagnosis else None,
            )
        )
    return reports


def _failing(readiness: ReadinessReport, ranks: list[RankReport]) -> RankReport | None:
    """The rank to blame: the one whose exit ended the wait, else the first that died, else the first unhealthy."""
    if readiness.outcome == "ready":
        return None
    named = [rank for rank in ranks if rank.name == readiness.failed_process]
    dead = [rank for rank in ranks if not rank.alive]
    unhealthy = [rank for rank in ranks if rank.diagnosis_class not in HEALTHY]
    candidates = named or dead or unhealthy or ranks
    return candidates[0] if candidates else None


def launch_across_nodes(
    args: LaunchEngineArgs,
    context: ToolContext,
    version: str | None,
    plan: Callable[[EngineLaunchConfig], EngineCommand],
) -> LaunchEngineOutput:
    config = args.config
    nodes = _nodes(config, context)
    check_port_free(config, context, nodes[0])
    records, command = _start_ranks(args, context, nodes, version, plan)
    settings = wait_settings(args, context)
    if args.wait:
        readiness = wait_for_ready(records[0], config, context, settings, peers=records[1:])
    else:
        readiness = ReadinessReport(outcome="not_waited")
    waited = readiness.outcome not in ("ready", "not_waited")
    ranks = _rank_reports(records, config, context, settings.hang_after_seconds) if waited else []
    failing = _failing(readiness, ranks)
    if failing is not None:
        readiness.failed_process = failing.name
        context.progress(f"{args.name}: rank {failing.node_rank} on {failing.host} failed: {failing.diagnosis_class}")
    record_finding(args.name, config, readiness, context)
    if failing is not None:
        context.state.add_finding(
            f"{args.name}: the failing rank is {failing.node_rank} on node {failing.host} ({failing.diagnosis_class})",
            evidence=[f"{rank.host} rank {rank.node_rank}: {rank.diagnosis_class}: {rank.key_line}" for rank in ranks]
            + [f"log of rank {failing.node_rank}: {failing.log_path} on {failing.host}"],
        )
    return LaunchEngineOutput(
        name=args.name,
        pid=records[0].pid,
        log_path=records[0].log_path,
        base_url=agent_url(nodes[0], config),
        host_base_url=base_url(config),
        argv=records[0].argv,
        env=records[0].env,
        entry_point=command.entry_point,
        engine_version=version,
        flags_from=command.flags_from,
        choices=command.choices,
        notes=command.notes,
        readiness=readiness,
        ranks=ranks,
    )
