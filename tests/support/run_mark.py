"""The test run's mark on every process the suite starts, and the reaper of what a run left running.

The first pytest process of a run (the xdist controller, or the only process) puts ``OPSLOOP_TEST_RUN`` in its
environment: ``PID:START_TICKS`` of itself, a pair no later process can share. Every process started from it
inherits the mark: the xdist workers, the agent's subprocesses, the engines they spawn (real vLLM and stand-ins),
and the namespaced nodes' sshd servers, which set it in their sessions too. A run that is killed (a timeout,
Ctrl-C twice) leaves its processes behind with a mark whose owner is gone; the next run's start ends them
(:func:`reap_orphans`), and a run that finishes ends what it left itself (:func:`reap_run`).

Processes are found by the mark alone (with their process group, for those whose environment cannot be read any
more: see :mod:`support.process_groups`), never by name: a process without the mark, or with the mark of a run that is
still going (another checkout's tests on the same machine), is never signalled.
"""

from __future__ import annotations

import os

from support import process_groups
from tools.hosts import procfs

RUN_MARK = "OPSLOOP_TEST_RUN"
# py-setproctitle (vLLM titles its EngineCore and Worker processes with it) overwrites the memory a process's
# environment is read from, unless this is set; then the title is limited to the length of the command line.
KEEP_ENVIRONMENT = {"SPT_NOENV": "1"}


def identity(pid: int) -> str | None:
    """The mark of a run owned by ``pid`` (``PID:START_TICKS``), or None when there is no such process."""
    stat = procfs.read_stat(pid)
    return None if stat is None else f"{pid}:{stat.start_ticks}"


def mark_this_run() -> str:
    """Make this process the owner of a run: every process it starts from now on carries the returned mark, and
    keeps it readable when it sets its title."""
    mark = identity(os.getpid())
    assert mark is not None, "this process reads its own stat line"
    os.environ[RUN_MARK] = mark
    os.environ.update(KEEP_ENVIRONMENT)
    return mark


def run_environment() -> dict[str, str]:
    """The run's mark as environment variables, for processes started where the environment is not inherited
    (the SSH sessions of the namespaced nodes); empty outside a marked run."""
    mark = os.environ.get(RUN_MARK)
    return {} if mark is None else {RUN_MARK: mark}


def owner_alive(mark: str) -> bool:
    """True while the process that owns the run named by ``mark`` is that same process and still running."""
    owner, _, _ = mark.partition(":")
    return owner.isdigit() and identity(int(owner)) == mark and procfs.alive(int(owner))


def reap_orphans(grace_seconds: float = process_groups.GRACE_SECONDS) -> list[int]:
    """End what killed runs left behind: the processes of runs whose owner is gone. Returns their pids."""
    alive: dict[str, bool] = {}

    def orphaned(group: int, environment: dict[str, str]) -> bool:
        mark = environment.get(RUN_MARK)
        if mark is None:
            return False
        if mark not in alive:
            alive[mark] = owner_alive(mark)
        return not alive[mark]

    return process_groups.end(orphaned, grace_seconds)


def reap_run(mark: str, grace_seconds: float = process_groups.GRACE_SECONDS) -> list[int]:
    """End what the run named by ``mark`` left running. Returns their pids."""
    return process_groups.end(lambda group, environment: environment.get(RUN_MARK) == mark, grace_seconds)
