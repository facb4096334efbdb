"""A tiny supervisor that runs one managed process and records how it ended.

Run as ``python -P -m tools.hosts.supervise --exit-dir DIR [--cwd DIR] -- ARGV...`` by
:class:`tools.hosts.local.LocalHost`, and by the remote helper on an SSH host. The host starts the supervisor
in a new session, so the supervisor leads the process group and its (pid, create_time) is the identity the
agent records.
The supervisor:

- starts ARGV in the same process group, with the inherited stdout/stderr (the log file);
- forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the child; a signal sent to the whole
  group reaches the child twice, which is harmless for termination signals;
- becomes a child subreaper (Linux), so workers orphaned by the child stay in its care; when the child
  exits, leftover workers are terminated (SIGTERM, then SIGKILL) so they cannot hold GPU memory;
- writes the child's exit code to ``DIR/<pid>-<create_time_ms>.json`` (see :func:`exit_record_path`) and a
  last line to the log, so the outcome stays readable after the agent restarts.

Exit codes follow :mod:`subprocess`: a negative value -N means the child was killed by signal N. This
module imports only the standard library (and :mod:`tools.hosts.procfs`), because it also runs on remote
hosts where the agent's dependencies are not installed.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime as dt
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from tools.hosts import procfs

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
LEFTOVER_GRACE_SECONDS = 3.0
LOG_PREFIX = "[opsloop-supervise]"
_PR_SET_CHILD_SUBREAPER = 36


def exit_record_path(exit_dir: Path, pid: int, create_time: float) -> Path:
    """Where the supervisor with this identity writes its child's exit record."""
    return exit_dir / f"{pid}-{round(create_time * 1000)}.json"


def read_exit_record(exit_dir: Path, pid: int, create_time: float) -> dict[str, object] | None:
    """The exit record of the supervisor with this identity, or None when none was written."""
    path = exit_record_path(exit_dir, pid, create_time)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def describe_exit(exit_code: int) -> str:
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"killed by {name} ({-exit_code})"
    return f"exited with code {exit_code}"


def _become_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: orphans go to init and are not cleaned up by us


def _terminate_leftovers() -> None:
    leftovers = _open_pidfds(procfs.children(os.getpid()))
    if not leftovers:
        return
    print(f"{LOG_PREFIX} terminating {len(leftovers)} leftover worker process(es)", file=sys.stderr, flush=True)
    # Signalled through pidfds opened while they were still this process's children: once reaped, their pids
    # are free for any process on the machine, and a signal by pid could reach a stranger.
    try:
        for signum in (signal.SIGTERM, signal.SIGKILL):
            for descriptor in leftovers:
                with contextlib.suppress(OSError):  # already exited
                    signal.pidfd_send_signal(descriptor, signum)
            deadline = time.monotonic() + LEFTOVER_GRACE_SECONDS
            while time.monotonic() < deadline and not all(_exited(descriptor) for descriptor in leftovers):
                _reap_orphans()
                time.sleep(0.05)
        _reap_orphans()
    finally:
        for descriptor in leftovers:
            os.close(descriptor)


def _open_pidfds(pids: list[int]) -> list[int]:
    descriptors = []
    for pid in pids:
        with contextlib.suppress(OSError):  # exited and reaped already
            descriptors.append(os.pidfd_open(pid))
    return descriptors


def _exited(descriptor: int) -> bool:
    """A pidfd turns readable once its process has exited (zombie or reaped)."""
    return bool(select.select([descriptor], [], [], 0)[0])


def _reap_orphans() -> None:
    """Collect exited workers that were re-parented to this subreaper, so they do not stay zombies."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def write_exit_record(exit_dir: Path, pid: int, create_time: float, exit_code: int, argv: list[str]) -> None:
    """Write (atomically) how the supervisor with this identity ended."""
    record = {
        "pid": pid,
        "create_time": create_time,
        "exit_code": exit_code,
        "description": describe_exit(exit_code),
        "program": argv[0] if argv else "",
        "ended_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),  # noqa: UP017 (Python 3.8)
    }
    exit_dir.mkdir(parents=True, exist_ok=True)
    path = exit_record_path(exit_dir, pid, create_time)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record), encoding="utf-8")
    os.replace(temporary, path)


def _write_record(exit_dir: Path, exit_code: int, argv: list[str]) -> None:
    pid = os.getpid()
    write_exit_record(exit_dir, pid, procfs.create_time(pid) or 0.0, exit_code, argv)


def supervise(argv: list[str], exit_dir: Path, cwd: Path | None = None) -> int:
    """Run argv to completion under supervision; return the child's exit code (negative: signal)."""
    _become_subreaper()
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=cwd)
    except OSError as error:
        print(
            f"{LOG_PREFIX} could not start {argv[0] if argv else '(empty command)'}: {error}",
            file=sys.stderr,
            flush=True,
        )
        _write_record(exit_dir, 127, argv)
        return 127

    def forward(signum: int, frame: FrameType | None) -> None:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    exit_code = child.wait()
    started_cleanup = time.monotonic()
    _terminate_leftovers()
    print(
        f"{LOG_PREFIX} process {child.pid} {describe_exit(exit_code)}"
        f" (cleanup {time.monotonic() - started_cleanup:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    _write_record(exit_dir, exit_code, argv)
    return exit_code


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a command and record its exit code.")
    parser.add_argument("--exit-dir", required=True, type=Path)
    parser.add_argument("--cwd", type=Path, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    parsed = parser.parse_args(arguments)
    command = list(parsed.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("no command given after --")
    exit_code = supervise(command, parsed.exit_dir, parsed.cwd)
    return exit_code if exit_code >= 0 else 128 - exit_code


if __name__ == "__main__":
    sys.exit(main())
