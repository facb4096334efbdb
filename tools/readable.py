"""Which files tools read on the agent's behalf: the logs of processes the agent started, the state's
``logs/`` directory, the configured engine log directories, and files a human approved.

A file is checked where it really is: it is opened first, and the path the kernel reports for the open
file must be inside an allowed place, so a symbolic link (or one swapped in after a check) cannot lead a
read to ``/etc/shadow`` or ``~/.ssh``. A file outside asks a human (:class:`NeedsApproval`); once
approved, that file stays readable for the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.base import NeedsApproval, ToolContext


def readable_places(context: ToolContext) -> list[Path]:
    """Directories and files that may be read without asking (resolved)."""
    places = [context.state_dir / "logs", *context.settings.readable_log_dirs]
    places += [Path(record.log_path) for record in context.state.processes if record.log_path]
    return [Path(os.path.realpath(place)) for place in places]


def approval_line(path: Path) -> str:
    return f"read: {path}"


def may_read(path: Path, context: ToolContext) -> bool:
    """Whether the resolved ``path`` is an allowed place, inside one, or approved by a human."""
    if any(path == place or place in path.parents for place in readable_places(context)):
        return True
    return context.state.take_approval(approval_line(path), consume=False) is not None


@contextmanager
def readable_file(path: Path, context: ToolContext) -> Iterator[Path]:
    """A path through which the file can be read (its open descriptor), after checking where it really is.
    Raises :class:`NeedsApproval` for a file outside the readable places, FileNotFoundError if missing."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        real = Path(os.readlink(f"/proc/self/fd/{descriptor}"))
        if not may_read(real, context):
            raise NeedsApproval(
                f"reading {real} needs approval: it is not the log of a process the agent started, nor in a "
                "configured log directory",
                evidence=[approval_line(real)],
            )
        yield Path(f"/proc/self/fd/{descriptor}")
    finally:
        os.close(descriptor)
