"""What the remote helper can do: commands and managed processes here, and the table of every operation.

Process identity works as on the local host: (pid, create_time) from /proc, signals only to the group led by
a process whose identity still matches, exit codes from the supervisor's record (or, for a supervisor this
helper started and reaped, from its wait status).
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.hosts import procfs, supervise
from tools.hosts.command import kill_group, run_command
from tools.hosts.remote import files, network
from tools.hosts.remote.errors import OperationError

CREATE_TIME_TOLERANCE = 1e-3


class HelperState:
    """What one helper process keeps: running command groups (killed if the agent goes away) and the
    supervisors it started (reaped so they do not linger as zombies)."""

    def __init__(self, helper_path: str) -> None:
        self.helper_path = os.path.abspath(helper_path)
        self.lock = threading.Lock()
        self.running_groups: set[int] = set()
        self.supervisors: dict[int, subprocess.Popen[bytes]] = {}

    def kill_running_commands(self) -> None:
        with self.lock:
            groups = list(self.running_groups)
        for group in groups:
            kill_group(group)

    def reap(self, exit_dir: str) -> None:
        """Collect supervisors that ended; one killed before writing its record gets a record from its status."""
        with self.lock:
            ended = [(pid, process) for pid, process in self.supervisors.items() if process.poll() is not None]
            for pid, _ in ended:
                del self.supervisors[pid]
        for pid, process in ended:
            started = getattr(process, "opsloop_create_time", None)
            if started is not None and supervise.read_exit_record(Path(exit_dir), pid, started) is None:
                supervise.write_exit_record(Path(exit_dir), pid, started, process.returncode or 0, [])


def hello(state: HelperState, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "home": os.path.expanduser("~"),
        "hostname": socket.gethostname(),
        "time": time.time(),
        "pid": os.getpid(),
    }


def run(state: HelperState, args: dict[str, Any]) -> dict[str, Any]:
    def track(group: int) -> None:
        with state.lock:
            state.running_groups.add(group)
            started.append(group)

    started: list[int] = []
    data = args.get("input_b64")
    try:
        completed = run_command(
            list(args["argv"]),
            timeout=float(args["timeout"]),
            cwd=os.path.expanduser(args["cwd"]) if args.get("cwd") else None,
            env=args.get("env") or None,
            input_bytes=None if data is None else base64.b64decode(data),
            output_cap_bytes=int(args.get("output_cap_bytes", 1_000_000)),
            on_start=track,
        )
    finally:
        with state.lock:
            state.running_groups.difference_update(started)
    return {
        "exit_code": completed.exit_code,
        "stdout": completed.stdout,
        "stderr": completed.stderr,
        "timed_out": completed.timed_out,
        "duration_seconds": completed.duration_seconds,
    }


def spawn(state: HelperState, args: dict[str, Any]) -> dict[str, Any]:
    log_path = os.path.expanduser(args["log_path"])
    exit_dir = os.path.expanduser(args["exit_dir"])
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    os.makedirs(exit_dir, exist_ok=True)
    cwd = ["--cwd", os.path.expanduser(args["cwd"])] if args.get("cwd") else []
    command = [sys.executable, "-I", state.helper_path, "supervise", "--exit-dir", exit_dir, *cwd, "--", *args["argv"]]
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**os.environ, **(args.get("env") or {})},
            start_new_session=True,  # it leads its own group and does not belong to this SSH session
        )
    finally:
        os.close(log)
    started = procfs.create_time(process.pid)
    if started is None:
        raise OperationError("failed", f"the supervisor {process.pid} vanished right after its start")
    process.opsloop_create_time = started  # type: ignore[attr-defined]
    with state.lock:
        state.supervisors[process.pid] = process
    return {"pid": process.pid, "create_time": started}


def _identified(pid: int, create_time: float) -> procfs.StatLine | None:
    stat = procfs.read_stat(pid)
    if stat is None:
        return None
    started = procfs.create_time(pid, stat)
    return stat if started is not None and abs(started - create_time) <= CREATE_TIME_TOLERANCE else None


def status(state: HelperState, args: dict[str, Any]) -> dict[str, Any]:
    pid, create_time, exit_dir = int(args["pid"]), float(args["create_time"]), os.path.expanduser(args["exit_dir"])
    state.reap(exit_dir)
    stat = _identified(pid, create_time)
    if stat is None or stat.state in ("Z", "X"):
        reused = stat is None and procfs.read_stat(pid) is not None
        record = supervise.read_exit_record(Path(exit_dir), pid, create_time)
        code = record.get("exit_code") if record else None
        return {"alive": False, "identity_matches": not reused, "exit_code": code if isinstance(code, int) else None}
    return {"alive": True, "identity_matches": True, **procfs.tree_counters(pid)}


def send_signal(state: HelperState, args: dict[str, Any]) -> dict[str, Any]:
    pid, create_time, signum = int(args["pid"]), float(args["create_time"]), int(args["signum"])
    stat = _identified(pid, create_time)
    if stat is None or stat.group != pid:
        return {"sent": False}  # gone, reused, or not the group leader we started: never someone else's group
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        return {"sent": False}
    return {"sent": True}


def find_marked(state: HelperState, args: dict[str, Any]) -> list[dict[str, Any]]:
    variable = str(args["variable"])
    found = []
    for pid in procfs.all_pids():
        stat = procfs.read_stat(pid)
        if stat is None or stat.session != pid or stat.state in ("Z", "X"):
            continue  # spawned processes lead their own session; their children inherit the marker
        environment = procfs.environ(pid)
        if environment is None or variable not in environment:
            continue
        started = procfs.create_time(pid, stat)
        found.append({"pid": pid, "create_time": started, "value": environment[variable], "argv": procfs.cmdline(pid)})
    return found


OPERATIONS: dict[str, Callable[[HelperState, dict[str, Any]], Any]] = {
    "hello": hello,
    "run": run,
    "spawn": spawn,
    "status": status,
    "signal": send_signal,
    "find_marked": find_marked,
    **files.OPERATIONS,
    **network.OPERATIONS,
}
# Safe to repeat after a dropped connection: they change nothing on the host.
IDEMPOTENT = {"hello", "status", "find_marked", *files.READING, *network.READING}
