"""Process facts read from Linux's /proc with the standard library alone.

The supervisor (:mod:`tools.hosts.supervise`) and the remote helper (:mod:`tools.hosts.remote`) run where
the agent's dependencies may not be installed, so they cannot use psutil. ``create_time`` follows psutil's
formula (start time in clock ticks over ticks per second, plus the boot time), so a process reads the same
identity here and through psutil.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass
class StatLine:
    """The fields of /proc/<pid>/stat this module needs."""

    state: str
    parent: int
    group: int
    session: int
    cpu_seconds: float  # user + system, own and waited-for children
    start_ticks: int
    rss_bytes: int


def boot_time() -> float:
    with open("/proc/stat", "rb") as handle:
        for line in handle:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise RuntimeError("no btime line in /proc/stat")


def read_stat(pid: int) -> StatLine | None:
    """The stat line of a process, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    ticks = sum(int(value) for value in fields[11:15])
    return StatLine(
        state=fields[0],
        parent=int(fields[1]),
        group=int(fields[2]),
        session=int(fields[3]),
        cpu_seconds=ticks / CLOCK_TICKS,
        start_ticks=int(fields[19]),
        rss_bytes=int(fields[21]) * PAGE_SIZE,
    )


def create_time(pid: int, stat: StatLine | None = None) -> float | None:
    """Seconds since the epoch when the process started (psutil's value), or None when it is gone."""
    stat = stat or read_stat(pid)
    return None if stat is None else stat.start_ticks / CLOCK_TICKS + boot_time()


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def children(pid: int, recursive: bool = True) -> list[int]:
    """Descendants of a process (children first, then theirs), read from every process's parent field."""
    parents: dict[int, list[int]] = {}
    for other in all_pids():
        stat = read_stat(other)
        if stat is not None:
            parents.setdefault(stat.parent, []).append(other)
    found: list[int] = []
    frontier = [pid]
    while frontier:
        kids = [kid for parent in frontier for kid in parents.get(parent, [])]
        found += kids
        frontier = kids if recursive else []
    return found


def environ(pid: int) -> dict[str, str] | None:
    """The process's initial environment, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def io_chars(pid: int) -> tuple[int, int] | None:
    """(read_chars, write_chars) of a process, page-cache reads included; None when not readable."""
    values: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/io", "rb") as handle:
            for line in handle:
                name, _, value = line.decode().partition(":")
                values[name] = int(value)
    except (OSError, ValueError):
        return None
    return values.get("rchar", 0), values.get("wchar", 0)


def tree_counters(pid: int) -> dict[str, float | int | None]:
    """CPU seconds, RSS and I/O summed over a process and its descendants (see ``Host.status``)."""
    cpu, rss, read, write, io_seen = 0.0, 0, 0, 0, False
    for member in [pid, *children(pid)]:
        stat = read_stat(member)
        if stat is None:
            continue
        cpu += stat.cpu_seconds
        rss += stat.rss_bytes
        io = io_chars(member)
        if io is not None:
            io_seen = True
            read += io[0]
            write += io[1]
    return {
        "cpu_seconds": cpu,
        "rss_bytes": rss,
        "read_bytes": read if io_seen else None,
        "write_bytes": write if io_seen else None,
    }


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    stat = read_stat(pid)
    return stat is not None and stat.state not in ("Z", "X")
