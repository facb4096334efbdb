"""Waiting for a launched engine: ready line, then /health; progress reports; early exit; hang detection.

The watcher follows the engine's log by byte offset (never re-reading it), reports loading milestones
(weight shards %, KV cache allocated, CUDA-graph capture) through ``context.progress``, and returns as
soon as one of these holds:

- ``ready``: /health (or /v1/models) answered 200 and the server serves the model launched; checked at once
  after the ready line and every ``health_every_seconds`` regardless, since ready-line wording differs
  between releases. Another program answering on the port never counts (a finding says so once);
- ``exited``: the process died; the log's diagnosis is attached;
- ``hung``: no activity at all (see :mod:`tools.engines.activity`) for ``hang_after_seconds``;
- ``timeout``: still loading past its deadline (the engine is left running). Progress decides the
  deadline (:mod:`tools.engines.deadline`): ``wait_timeout_seconds`` until the weight load shows a rate,
  then what that rate needs with a margin; ``fixed_deadline`` makes ``wait_timeout_seconds`` final.
Every outcome but ``ready`` carries the diagnosis of the log.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from engine_facts.milestones import milestones as release_milestones
from tools.base import ToolContext
from tools.engines.activity import ActivityMonitor
from tools.engines.config import EngineLaunchConfig
from tools.engines.deadline import LoadDeadline
from tools.engines.health import HealthCheck, check_health
from tools.hosts.base import Host, ProcessStatus
from tools.logs.diagnose import Diagnosis, DiagnosisHints
from tools.logs.kernel import engine_oom_kills
from tools.logs.library import SignatureLibrary, load_library
from tools.logs.on_host import diagnose_on_host
from tools.logs.reader import last_frame
from tools.logs.settings_dump import engine_settings_of
from tools.processes import refresh
from tools.records import ProcessRecord

Outcome = Literal["ready", "exited", "hung", "timeout", "not_waited", "started", "dry_run"]


class WaitSettings(BaseModel):
    wait_timeout_seconds: float = Field(gt=0)
    hang_after_seconds: float = Field(gt=0)
    poll_seconds: float = Field(2.0, gt=0)
    health_every_seconds: float = Field(10.0, gt=0)
    fixed_deadline: bool = False  # True: wait_timeout_seconds is final, whatever the load's rate
    started_ago_seconds: float = Field(0.0, ge=0)  # the engine started this long before the wait (a re-watch)


class ReadinessReport(BaseModel):
    outcome: Outcome
    waited_seconds: float = 0.0
    ready_line: str | None = None
    health: str | None = None
    milestones: list[str] = Field(default_factory=list)
    activity_seen: list[str] = Field(default_factory=list)
    quiet_seconds: float = 0.0
    exit_code: int | None = None
    diagnosis: Diagnosis | None = None
    log_offset: int = 0
    # Settings the engine reports it runs with (launch-config names), e.g. its default CUDA-graph cap.
    engine_settings: dict[str, Any] = Field(default_factory=dict)
    # A multi-node launch: the rank whose exit ended the wait (its diagnosis is the one above).
    failed_process: str | None = None
    load_fraction: float = 0.0  # how much of the weight load was reported done
    projected_load_seconds: float | None = None  # the load's duration from its measured rate
    deadline_seconds: float = 0.0  # when waiting would have ended (from the measured rate, else the base)
    progress_note: str = ""  # the load's progress, rate and deadline, for people


class RankReport(BaseModel):
    """One rank of a multi-node engine after the wait: where it ran, whether it lives, what its log says."""

    node_rank: int
    host: str
    name: str
    pid: int
    alive: bool
    exit_code: int | None = None
    log_path: str
    diagnosis_class: str | None = None
    key_line: str | None = None


class _LogFollower:
    """New complete lines of the log (on its host), with ready lines and progress milestones picked out."""

    def __init__(
        self, host: Host, path: str, engine: str, library: SignatureLibrary, version: str | None = None
    ) -> None:
        self.host, self.path = host, path
        self.offset = 0
        # The release's own wording (from the release data) comes on top of the library's patterns.
        release_lines = release_milestones(engine, version)
        self.ready_patterns = [ready.regex for ready in library.ready if ready.engine == engine]
        self.ready_patterns += [line.regex for line in release_lines if line.stage == "ready"]
        self.progress = library.progress
        self.release_lines = [line for line in release_lines if line.stage != "ready"]
        self.ready_line: str | None = None
        self.stage: str | None = None
        self.load_fraction: float | None = None  # the latest "done/total shards" of the weight load

    def poll(self) -> tuple[int, list[str]]:
        """(new line count, new milestone messages)."""
        try:
            chunk = self.host.read_since(self.path, self.offset, max_bytes=256 * 1024)
        except FileNotFoundError:
            return 0, []
        self.offset = chunk.new_offset
        lines = [last_frame(line) for line in chunk.text.splitlines() if line.strip()]
        milestones: list[str] = []
        for line in lines:
            if self.ready_line is None and any(pattern.search(line) for pattern in self.ready_patterns):
                self.ready_line = line
            for progress in self.progress:
                match = progress.regex.search(line)
                if match:
                    self.stage = progress.stage
                    milestones.append(progress.describe(match))
                    self._load_fraction(match)
                    break
            else:
                known = next((item for item in self.release_lines if item.regex.search(line)), None)
                if known is not None:
                    self.stage = known.stage
                    milestones.append(known.message)
        return len(lines), milestones

    def _load_fraction(self, match: re.Match[str]) -> None:
        groups = match.groupdict()
        if self.stage == "weights" and (groups.get("done") or "").isdigit() and (groups.get("total") or "").isdigit():
            self.load_fraction = int(groups["done"]) / max(1, int(groups["total"]))


def _dead_peer(peers: Sequence[ProcessRecord], context: ToolContext) -> tuple[ProcessRecord, ProcessStatus] | None:
    for peer in peers:
        status = refresh(peer, context.host_of(peer))
        if not status.alive:
            return peer, status
    return None


def wait_for_ready(
    record: ProcessRecord,
    config: EngineLaunchConfig,
    context: ToolContext,
    settings: WaitSettings,
    peers: Sequence[ProcessRecord] = (),
) -> ReadinessReport:
    """Watch the engine until ready, dead, hung or out of time; keeps ``record.state`` current. ``peers``: the
    other ranks of a multi-node engine; one that exits ends the wait with its own log's diagnosis."""
    host = context.host_of(record)
    started = time.monotonic()
    follower = _LogFollower(
        host, record.log_path, config.engine, load_library(), str(record.config.get("engine_version") or "") or None
    )
    monitor = ActivityMonitor(settings.hang_after_seconds)
    deadline = LoadDeadline(
        settings.wait_timeout_seconds,
        settings.hang_after_seconds,
        settings.fixed_deadline,
        started_ago=settings.started_ago_seconds,
    )
    report = ReadinessReport(outcome="timeout")
    announced = {"limit": settings.wait_timeout_seconds}
    last_health = float("-inf")
    foreign_noted = False

    def read_log() -> int:
        new_lines, milestones = follower.poll()
        for message in milestones:
            if not report.milestones or report.milestones[-1] != message:
                report.milestones.append(message)
                context.progress(f"{record.name}: {message}")
        if new_lines and record.state == "starting":
            record.state = "loading"
        if follower.load_fraction is not None:
            deadline.observe_fraction(follower.load_fraction)
        if follower.stage not in (None, "distributed_init", "weights"):
            deadline.observe_weights_done()
        if deadline.limit_seconds() > 1.1 * announced["limit"]:  # say so when the rate moves the deadline
            announced["limit"] = deadline.limit_seconds()
            context.progress(f"{record.name}: still progressing: {deadline.describe()}")
        return new_lines

    while True:
        status = refresh(record, host)
        new_lines = read_log()
        if not status.alive:
            read_log()
            report.outcome = "exited"
            report.exit_code = status.exit_code
            report.diagnosis = _diagnosis(
                record,
                config,
                context,
                alive=False,
                exit_code=status.exit_code,
                stale_after_seconds=settings.hang_after_seconds,
            )
            break
        dead = _dead_peer(peers, context)
        if dead is not None:
            peer, peer_status = dead
            report.outcome, report.exit_code, report.failed_process = "exited", peer_status.exit_code, peer.name
            stale = settings.hang_after_seconds
            report.diagnosis = _diagnosis(
                peer, config, context, alive=False, exit_code=peer_status.exit_code, stale_after_seconds=stale
            )
            break
        monitor.observe(
            status, new_lines, host.gpu_memory_used_mib(), nccl_init_stage=follower.stage == "distributed_init"
        )
        now = time.monotonic()
        if follower.ready_line is not None or now - last_health >= settings.health_every_seconds:
            last_health = now
            health = check_health(host, config)
            report.health = health.describe()
            if health.foreign and not foreign_noted:
                foreign_noted = True
                _note_foreign_server(record, health, context)
            if health.ok:
                read_log()  # what the engine printed while the check was under way
                record.state = "ready"
                report.outcome = "ready"
                break
        if monitor.hung:
            record.state = "hung"
            report.outcome = "hung"
            report.diagnosis = _diagnosis(
                record, config, context, alive=True, exit_code=None, stale_after_seconds=settings.hang_after_seconds
            )
            break
        if deadline.due():
            report.diagnosis = _diagnosis(
                record, config, context, alive=True, exit_code=None, stale_after_seconds=settings.hang_after_seconds
            )
            break
        time.sleep(settings.poll_seconds)
    report.ready_line = follower.ready_line
    report.waited_seconds = round(time.monotonic() - started, 2)
    report.activity_seen = sorted(monitor.signals_seen)
    report.quiet_seconds = round(monitor.quiet_seconds, 2)
    report.log_offset = follower.offset
    report.engine_settings = engine_settings_of(host, record.log_path)
    report.load_fraction = deadline.fraction
    report.projected_load_seconds = deadline.projected_load_seconds()
    report.deadline_seconds = round(deadline.limit_seconds(), 2)
    report.progress_note = deadline.describe()
    return report


def _note_foreign_server(record: ProcessRecord, health: HealthCheck, context: ToolContext) -> None:
    """Another program answers on the engine's port: said once, as a finding; the wait goes on (our engine
    usually exits next, unable to bind the port, and its log's diagnosis follows)."""
    context.progress(f"{record.name}: {health.detail}")
    context.state.add_finding(f"{record.name}: {health.detail}", evidence=[health.describe()])


def _diagnosis(
    record: ProcessRecord,
    config: EngineLaunchConfig,
    context: ToolContext,
    *,
    alive: bool,
    exit_code: int | None,
    stale_after_seconds: float,
) -> Diagnosis:
    host = context.host_of(record)
    hints = DiagnosisHints(
        engine=config.engine,
        interconnect=context.state.environment.interconnect,
        process_alive=alive,
        exit_code=exit_code,
        stale_after_seconds=stale_after_seconds,
        kernel_lines=[] if alive else engine_oom_kills(host, [record.pid], record.log_path),
    )
    return diagnose_on_host(host, record.log_path, hints)
