"""Managed processes: start, record, watch, stop, and re-adopt after the agent restarts.

A managed process is identified by (pid, create_time) as recorded in ``state.processes``. Signals go
through :meth:`Host.signal_group`, which refuses when the identity no longer matches, so the agent never
signals a process it did not start, even when the PID has been reused. When the group leader is gone but
members of its group live on (an engine's workers after the leader was killed: vLLM's EngineCore and
Worker outlive their API server), stopping signals those members one by one, each identified by the
marker the spawn put in its environment (inherited, naming this process's log) and its own
(pid, create_time).
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tools.base import ToolContext, ToolError, ToolState
from tools.hosts.base import CallInterrupted, Host, HostUnreachable, MarkedProcess, ProcessStatus
from tools.records import ProcessRecord, is_live
from tools.redact import redact_env, redact_text, redact_value

# Every spawned process carries its run, name, kind and log here, so that a resume can adopt one the agent
# was killed too early to record (between spawning it and saving the state).
SPAWN_MARKER = "OPSLOOP_SPAWNED"
# vLLM (and other programs using setproctitle) retitle their worker processes by writing over the memory that
# holds the environment, which erases the marker: a stop could then not find workers whose leader is gone.
# SPT_NOENV tells setproctitle to leave the environment alone.
MARKER_KEEPING_ENVIRONMENT = {"SPT_NOENV": "1"}
DEFAULT_STOP_GRACE_SECONDS = 30.0
KILL_WAIT_SECONDS = 10.0


class StopOutcome(BaseModel):
    name: str
    pid: int
    was_alive: bool
    sent_sigterm: bool = False
    sent_sigkill: bool = False
    stopped: bool
    exit_code: int | None = None
    message: str


def live_processes(state: ToolState, kind: str | None = None) -> list[ProcessRecord]:
    return [record for record in state.processes if is_live(record) and (kind is None or record.kind == kind)]


def resolve_process(state: ToolState, name: str | None, kind: str | None = None) -> ProcessRecord:
    """The newest record with this name (or, without a name, the newest of this kind); ToolError if none."""
    candidates = [record for record in state.processes if kind is None or record.kind == kind]
    if name is not None:
        candidates = [record for record in candidates if record.name == name]
    if not candidates:
        known = ", ".join(sorted({record.name for record in state.processes})) or "none"
        wanted = f"named {name!r}" if name else f"of kind {kind!r}" if kind else "at all"
        raise ToolError(f"no managed process {wanted}; known processes: {known}")
    live = [record for record in candidates if is_live(record)]
    return (live or candidates)[-1]


def group_members(state: ToolState, leader: ProcessRecord) -> list[ProcessRecord]:
    """The other live ranks of a multi-node engine whose rank-0 process is ``leader``."""
    return [
        record for record in state.processes if record.group == leader.name and record is not leader and is_live(record)
    ]


def _log_name(name: str, step: int) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name) or "process"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"{safe}-step{step:05d}-{stamp}.log"


def start_process(
    context: ToolContext,
    *,
    name: str,
    argv: list[str],
    env: dict[str, str] | None = None,
    kind: str = "process",
    port: int | None = None,
    config: dict[str, Any] | None = None,
    cwd: Path | None = None,
    host: Host | None = None,
    group: str = "",
) -> ProcessRecord:
    """Spawn argv detached through the host (default: the run's first), record it in the state and checkpoint
    at once.

    ``argv`` is the real command; the host may translate it (the simulated host swaps in stand-ins), in
    which case the command actually run is kept as ``host_argv``. Env values and argv are redacted. The log is
    written on that host (``Host.log_dir``).
    """
    host = host or context.host
    environment = dict(env or {})
    log_path = host.log_dir(context.logs_dir) / _log_name(name, context.state.step)
    host_argv = host.translate(list(argv))
    mark = json.dumps({"run": context.state.run_id, "name": name, "kind": kind, "log": str(log_path), "port": port})
    spawn_environment = {**environment, **MARKER_KEEPING_ENVIRONMENT, SPAWN_MARKER: mark}
    spawned = host.spawn(host_argv, env=spawn_environment, log_path=log_path, cwd=cwd)
    record = ProcessRecord(
        name=name,
        pid=spawned.pid,
        create_time=spawned.create_time,
        argv=[redact_text(part) for part in argv],
        env=redact_env(environment),
        log_path=str(log_path),
        port=port,
        kind=kind,
        config=redact_value(dict(config or {})),
        host="" if host is context.host else host.name,
        group=group,
    )
    if host_argv != list(argv):
        record.host_argv = [redact_text(part) for part in host_argv]
    context.state.processes.append(record)
    context.checkpoint()
    return record


def refresh(record: ProcessRecord, host: Host) -> ProcessStatus:
    """Current status; a record whose process is gone becomes ``exited`` with its exit code."""
    status = host.status(record.pid, record.create_time)
    if not status.alive:
        if is_live(record):
            record.state = "exited"
        if status.exit_code is not None and record.exit_code is None:
            record.exit_code = status.exit_code
    return status


def _wait_until_gone(record: ProcessRecord, host: Host, seconds: float, poll_seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if not host.status(record.pid, record.create_time).alive:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_seconds)


def stop_process(
    record: ProcessRecord, host: Host, *, grace_seconds: float = DEFAULT_STOP_GRACE_SECONDS, poll_seconds: float = 0.2
) -> StopOutcome:
    """SIGTERM to the process group, SIGKILL after ``grace_seconds``; only if the identity matches."""
    status = refresh(record, host)
    if not status.alive:
        why = "its PID now belongs to another process" if not status.identity_matches else "it had already exited"
        remains = group_remains(record, host)
        outcome = StopOutcome(
            name=record.name,
            pid=record.pid,
            was_alive=False,
            stopped=True,
            exit_code=record.exit_code,
            message=f"not signalled: {why}",
        )
        if remains:
            _stop_remains(remains, host, outcome, grace_seconds, poll_seconds)
        return outcome
    outcome = StopOutcome(name=record.name, pid=record.pid, was_alive=True, stopped=False, message="")
    outcome.sent_sigterm = host.signal_group(record.pid, record.create_time, signal.SIGTERM)
    gone = _wait_until_gone(record, host, grace_seconds, poll_seconds)
    if not gone:
        outcome.sent_sigkill = host.signal_group(record.pid, record.create_time, signal.SIGKILL)
        gone = _wait_until_gone(record, host, KILL_WAIT_SECONDS, poll_seconds)
    final = host.status(record.pid, record.create_time)
    outcome.stopped = gone
    outcome.exit_code = final.exit_code
    if gone:
        record.state = "stopped"
        record.exit_code = final.exit_code
        how = "SIGKILL after the grace period" if outcome.sent_sigkill else "SIGTERM"
        outcome.message = f"stopped by {how}"
    else:
        outcome.message = "still running after SIGTERM and SIGKILL; it may be stuck in the kernel (D state)"
    return outcome


def group_remains(record: ProcessRecord, host: Host) -> list[MarkedProcess]:
    """Live members of the record's process group that this spawn started (their inherited marker names the
    record's log), after the leader itself is gone."""
    remains = []
    for member in host.group_members(record.pid, SPAWN_MARKER):
        try:
            mark = json.loads(member.value)
        except ValueError:
            continue
        if isinstance(mark, dict) and mark.get("log") == record.log_path:
            remains.append(member)
    return remains


def _stop_remains(
    remains: list[MarkedProcess], host: Host, outcome: StopOutcome, grace_seconds: float, poll_seconds: float
) -> None:
    """SIGTERM each remaining member, SIGKILL what is still there after the grace period."""
    outcome.was_alive = True
    outcome.sent_sigterm = any([host.signal_process(item.pid, item.create_time, signal.SIGTERM) for item in remains])
    deadline = time.monotonic() + grace_seconds
    alive = remains
    while alive and time.monotonic() < deadline:
        time.sleep(poll_seconds)
        alive = [item for item in alive if host.status(item.pid, item.create_time).alive]
    if alive:
        outcome.sent_sigkill = any([host.signal_process(item.pid, item.create_time, signal.SIGKILL) for item in alive])
        kill_deadline = time.monotonic() + KILL_WAIT_SECONDS
        while alive and time.monotonic() < kill_deadline:
            time.sleep(poll_seconds)
            alive = [item for item in alive if host.status(item.pid, item.create_time).alive]
    pids = ", ".join(str(item.pid) for item in remains)
    outcome.stopped = not alive
    outcome.message = (
        f"the group leader had already exited; {len(remains)} process(es) of its group were still running "
        f"(pids {pids}) and were stopped by {'SIGKILL after the grace period' if outcome.sent_sigkill else 'SIGTERM'}"
        if not alive
        else f"the group leader had exited; processes {pids} of its group survive SIGTERM and SIGKILL"
    )


def _host_for(record: ProcessRecord, hosts: Sequence[Host]) -> Host | None:
    if not record.host:
        return hosts[0]
    return next((host for host in hosts if host.name == record.host), None)


def reconcile_processes(state: ToolState, hosts: Host | Sequence[Host]) -> list[str]:
    """On resume: re-adopt live records whose (pid, create_time) still match; mark the rest exited.

    Returns one human-readable line per live record examined. Nothing is signalled here. Processes this
    run spawned but never recorded (see ``SPAWN_MARKER``) are adopted with state ``unknown``. A record on a
    host that cannot be reached now, or that this run no longer has, is left as it is (said in a line).
    """
    hosts = [hosts] if isinstance(hosts, Host) else list(hosts)
    notes = adopt_unrecorded(state, hosts)
    for record in state.processes:
        if not is_live(record):
            continue
        host = _host_for(record, hosts)
        if host is None:
            notes.append(f"{record.name} (pid {record.pid}): on host {record.host!r}, which this run does not have")
            continue
        try:
            status = host.status(record.pid, record.create_time)
        except (HostUnreachable, CallInterrupted) as error:
            notes.append(f"{record.name} (pid {record.pid}): host {host.name} cannot be reached ({error}); left as is")
            continue
        if status.alive:
            notes.append(f"{record.name} (pid {record.pid}): re-adopted, still running")
            continue
        record.state = "exited"
        record.exit_code = status.exit_code
        if not status.identity_matches:
            notes.append(
                f"{record.name} (pid {record.pid}): gone; the PID now belongs to another process,"
                " which will not be touched"
            )
        else:
            code = "unknown exit code" if status.exit_code is None else f"exit code {status.exit_code}"
            notes.append(f"{record.name} (pid {record.pid}): exited while the agent was away ({code})")
    return notes


def adopt_unrecorded(state: ToolState, hosts: Sequence[Host]) -> list[str]:
    """Adopt processes this run spawned on these hosts but never recorded (the agent died, or the connection
    dropped, between the spawn and the save). Hosts that cannot be reached are skipped."""
    notes: list[str] = []
    for host in hosts:
        try:
            notes += _adopt_unrecorded(state, host, "" if host is hosts[0] else host.name)
        except (HostUnreachable, CallInterrupted) as error:
            notes.append(f"host {host.name} cannot be reached to look for unrecorded processes ({error})")
    return notes


def _adopt_unrecorded(state: ToolState, host: Host, host_name: str) -> list[str]:
    notes = []
    for found in host.find_marked(SPAWN_MARKER):
        try:
            mark = json.loads(found.value)
        except ValueError:
            continue
        if (
            not isinstance(mark, dict)
            or mark.get("run") != state.run_id
            or any(
                record.pid == found.pid
                and abs(record.create_time - found.create_time) < 1e-3
                and record.host == host_name
                for record in state.processes
            )
        ):
            continue
        port = mark.get("port")
        record = ProcessRecord(
            name=str(mark.get("name")),
            pid=found.pid,
            create_time=found.create_time,
            argv=[redact_text(part) for part in found.argv],
            log_path=str(mark.get("log", "")),
            port=port if isinstance(port, int) else None,
            kind=str(mark.get("kind", "process")),
            state="unknown",
            host=host_name,
        )
        state.processes.append(record)
        notes.append(
            f"{record.name} (pid {record.pid}): started just before the agent stopped, never recorded; adopted"
        )
    return notes
