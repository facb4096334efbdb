"""The test run's mark and the reaper: what a killed run left behind is ended, and nothing else is signalled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.cli import agent_environment
from support.run_mark import RUN_MARK, identity, owner_alive, reap_orphans
from support.tool_context import fake

from tools.hosts import procfs

# Every test here ends all orphans on the machine: they run one after another, on one worker.
pytestmark = pytest.mark.xdist_group("run_mark")

# A run owner that marks itself, starts a long-running child in a session of its own, prints its pid and waits.
OWNER = f"""
import subprocess, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from support.run_mark import mark_this_run
mark_this_run()
child = subprocess.Popen([sys.executable, {fake("sleeper.py")!r}], start_new_session=True, stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
sys.stdin.read()
"""


# A group leader that starts more members of its process group, with the environments given as JSON (an empty one
# is what a process that rewrote it for its title shows), and prints their pids.
GROUP = f"""
import json, subprocess, sys
sleeper = [sys.executable, {fake("sleeper.py")!r}]
members = [subprocess.Popen(sleeper, env=env, stdout=subprocess.PIPE) for env in json.loads(sys.argv[1])]
for member in members:
    member.stdout.readline()
print(*[member.pid for member in members], flush=True)
sys.stdin.read()
"""


def _start_sleeper(environment: dict[str, str], *extra: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, fake("sleeper.py"), *extra], env=environment, stdout=subprocess.PIPE, start_new_session=True
    )
    assert process.stdout is not None and process.stdout.readline() == b"sleeper started\n"
    return process


def _environment(mark: str | None) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if name != RUN_MARK}
    return environment if mark is None else {**environment, RUN_MARK: mark}


def _dead_mark() -> str:
    """The mark of a run whose owner has exited."""
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as owner:
        mark = identity(owner.pid)
    assert mark is not None and not owner_alive(mark)
    return mark


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def test_this_run_is_marked_and_its_agent_subprocesses_carry_the_mark() -> None:
    mark = os.environ[RUN_MARK]
    assert owner_alive(mark)
    assert agent_environment()[RUN_MARK] == mark


def test_a_process_of_a_run_whose_owner_is_dead_is_ended_and_no_other(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    orphan = _start_sleeper(_environment(_dead_mark()))
    unmarked = _start_sleeper(_environment(None))
    alive_run = _start_sleeper(_environment(identity(os.getpid())))  # a run that is still going
    processes += [orphan, unmarked, alive_run]

    ended = reap_orphans(grace_seconds=10)

    assert orphan.pid in ended
    assert orphan.wait(timeout=30) == -signal.SIGTERM
    assert unmarked.pid not in ended and alive_run.pid not in ended
    assert unmarked.poll() is None and alive_run.poll() is None


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(processes: list[subprocess.Popen[bytes]]) -> None:
    stubborn = _start_sleeper(_environment(_dead_mark()), "--ignore-term")
    processes.append(stubborn)

    assert stubborn.pid in reap_orphans(grace_seconds=0.5)

    assert stubborn.wait(timeout=30) == -signal.SIGKILL


@contextmanager
def _dead_runs_group(*environments: dict[str, str]) -> Iterator[tuple[int, list[int]]]:
    """A group led by a process of a dead run, with members started with ``environments``: (leader, members)."""
    with subprocess.Popen(
        [sys.executable, "-c", GROUP, json.dumps(environments)],
        env=_environment(_dead_mark()),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as leader:
        assert leader.stdout is not None
        members = [int(pid) for pid in leader.stdout.readline().split()]
        try:
            yield leader.pid, members
        finally:
            leader.kill()
            for pid in members:
                if procfs.alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_member_without_environment_is_ended_with_a_group_of_the_dead_run() -> None:
    with _dead_runs_group({}) as (leader, [blank]):
        assert sorted(reap_orphans(grace_seconds=10)) == sorted([leader, blank])
        assert not procfs.alive(blank)


def test_a_group_with_someone_elses_member_loses_only_the_marked_ones() -> None:
    """The blank member cannot be told from the unmarked one's kind: both stay."""
    with _dead_runs_group({}, {"UNRELATED": "1"}) as (leader, [blank, unmarked]):
        ended = reap_orphans(grace_seconds=10)
        assert leader in ended and blank not in ended and unmarked not in ended
        assert procfs.alive(blank) and procfs.alive(unmarked)


def test_what_a_killed_run_started_is_ended_by_the_next_run() -> None:
    """The owner marks itself and starts a child in a session of its own; the owner is killed, the child stays
    behind (re-parented), and the reaper ends it."""
    with subprocess.Popen(
        [sys.executable, "-c", OWNER], env=_environment(None), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as owner:
        assert owner.stdout is not None
        child = int(owner.stdout.readline())
        owner.kill()
    try:
        assert procfs.alive(child)

        assert child in reap_orphans(grace_seconds=10)

        assert not procfs.alive(child)
    finally:
        if procfs.alive(child):
            os.kill(child, signal.SIGKILL)
