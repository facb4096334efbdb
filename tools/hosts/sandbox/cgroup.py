"""A cap on the number of processes of one confined command: a ``pids`` control group.

``RLIMIT_NPROC`` does not bind root (the kernel exempts it), and a fork bomb in a fresh PID namespace
is still a fork bomb for the machine, so the cap is a control group of its own with ``pids.max``, the
only limit the kernel enforces for every user. The command's launcher joins the group before it starts
the sandbox, so everything the command forks is counted. Where no ``pids`` controller can be used
(cgroup v1 without one, a v2 hierarchy without delegation), :func:`create_pids_group` returns None and
the sandbox runs without the cap; the wall-time limit still ends the command.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


def _own_paths() -> tuple[str | None, str | None]:
    """This process's cgroup path in the v1 ``pids`` hierarchy and in the v2 hierarchy."""
    v1 = v2 = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if match := re.fullmatch(r"\d+:([^:]*):(.*)", line):
                controllers, path = match.groups()
                if "pids" in controllers.split(","):
                    v1 = path
                elif controllers == "":
                    v2 = path
    return v1, v2


def _candidate_parents() -> list[tuple[Path, bool]]:
    """(directory to create the group in, whether it is cgroup v2)."""
    v1, v2 = _own_paths()
    found: list[tuple[Path, bool]] = []
    if v1 is not None and (CGROUP_ROOT / "pids").is_dir():
        found.append((CGROUP_ROOT / "pids" / v1.lstrip("/"), False))
    if v2 is not None:
        controllers = CGROUP_ROOT / "cgroup.controllers"
        with contextlib.suppress(OSError):
            if "pids" in controllers.read_text().split():
                found.append((CGROUP_ROOT / v2.lstrip("/"), True))
    return found


def create_pids_group(limit: int) -> Path | None:
    """A new control group allowing at most ``limit`` processes, or None where none can be made."""
    for parent, unified in _candidate_parents():
        group = parent / f"opsloop-shell-{os.getpid()}-{next(_counter)}"
        try:
            if unified:
                (parent / "cgroup.subtree_control").write_text("+pids")
            group.mkdir()
        except OSError:
            continue
        try:
            (group / "pids.max").write_text(str(limit))
            return group
        except OSError:
            remove_group(group)
    return None


def remove_group(group: Path) -> None:
    """Kill whatever is left in the group (only the confined command's processes are there) and remove it."""
    for _ in range(50):
        try:
            members = [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
        except OSError:
            members = []
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # members are still exiting
