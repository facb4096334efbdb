"""Ending the processes the tests started, found by a mark in their environment and by their process group.

A mark (an environment variable) is inherited by every process started below the one that set it, but a process
that sets its title rewrites the memory its environment is read from: vLLM's ``VLLM::EngineCore`` and
``VLLM::Worker`` show an empty one. Such a process is ended only with its process group, and only when every other
live member of that group carries an accepted mark: then the group is the marked processes' own (a group id stays
taken while any member lives, so it cannot have been handed to someone else). A member whose environment names
something else, or cannot be read, keeps its group's unmarked members out of reach; marked members are still ended.

Every signal goes through a pidfd opened before the member is checked a second time, so it cannot reach a process
that took a checked one's pid in between. Zombies are left alone (they hold nothing but their exit status).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from tools.hosts import procfs

# Whether a member is one of those to end, from its process group and its (non-empty) environment.
Accept = Callable[[int, dict[str, str]], bool]
GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class Member:
    pid: int
    group: int
    environment: dict[str, str] | None  # None: not readable; empty: rewritten for a title, or started without one


def live_members() -> dict[int, list[Member]]:
    """Process group id -> its live members (zombies left out)."""
    groups: dict[int, list[Member]] = {}
    for pid in procfs.all_pids():
        stat = procfs.read_stat(pid)
        if stat is None or stat.state in ("Z", "X"):
            continue
        groups.setdefault(stat.group, []).append(Member(pid, stat.group, procfs.environ(pid)))
    return groups


def _still(member: Member, accept: Accept) -> bool:
    """The pid still names a member of the same group, marked (or blank) as it was."""
    stat = procfs.read_stat(member.pid)
    environment = procfs.environ(member.pid)
    if stat is None or stat.group != member.group or environment is None:
        return False
    return accept(member.group, environment) if member.environment else not environment


def targets(accept: Accept) -> list[Member]:
    """The members to end: every accepted one, and the blank ones of groups with no member of anyone else."""
    chosen: list[Member] = []
    for group, members in live_members().items():
        accepted = [member for member in members if member.environment and accept(group, member.environment)]
        if not accepted:
            continue
        blank = [member for member in members if member.environment == {}]
        foreign = len(members) - len(accepted) - len(blank)
        chosen += accepted + (blank if foreign == 0 else [])
    return chosen


def _open_checked(member: Member, accept: Accept) -> int | None:
    try:
        descriptor = os.pidfd_open(member.pid)
    except OSError:
        return None
    if _still(member, accept):
        return descriptor
    os.close(descriptor)
    return None


def end(accept: Accept, grace_seconds: float = GRACE_SECONDS) -> list[int]:
    """SIGTERM to every member :func:`targets` chooses, SIGKILL to those still running after ``grace_seconds``;
    returns their pids."""
    descriptors: dict[int, int] = {}
    for member in targets(accept):
        descriptor = _open_checked(member, accept)
        if descriptor is not None:
            descriptors[member.pid] = descriptor
    try:
        for descriptor in descriptors.values():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(descriptor, signal.SIGTERM)
        _wait_exited(list(descriptors.values()), grace_seconds)
        for descriptor in descriptors.values():
            with contextlib.suppress(OSError):  # already exited: nothing to do
                signal.pidfd_send_signal(descriptor, signal.SIGKILL)
        _wait_exited(list(descriptors.values()), grace_seconds)
    finally:
        for descriptor in descriptors.values():
            os.close(descriptor)
    return sorted(descriptors)


def _wait_exited(descriptors: list[int], seconds: float) -> None:
    """Until every pidfd reports its process exited (readable), or ``seconds`` pass."""
    poller = select.poll()
    pending = set(descriptors)
    for descriptor in pending:
        poller.register(descriptor, select.POLLIN)
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        for descriptor, _ in poller.poll(max(1, int((deadline - time.monotonic()) * 1000))):
            pending.discard(descriptor)
            poller.unregister(descriptor)
