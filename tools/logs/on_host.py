"""Logs where they live: bounded reads and diagnoses of a log on a host (local or remote), by its path there.

The host reads the file (from the end, within a byte budget; a remote host does it there and sends only the
result), so following or diagnosing a multi-GB engine log costs the same on a GPU server reached over SSH.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.base import NeedsApproval, ToolContext, ToolError
from tools.hosts.base import Host
from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_window
from tools.logs.window import DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES
from tools.readable import approval_line, readable_file


def require_log(host: Host, path: str) -> None:
    """ToolError when the host has no such file (yet)."""
    if host.file_facts(path) is None:
        where = "" if host.name in ("local", "sim") else f" on {host.name}"
        raise ToolError(f"log file {path}{where} does not exist (yet)")


def may_read_on(host: Host, path: str, context: ToolContext) -> bool:
    """Whether a file on a remote host may be read: (its real path there) the log of a process the agent started
    on that host, inside the run's log directory there, or approved by a human."""
    real = host.real_path(path)
    places = [str(host.log_dir(context.logs_dir))]
    places += [record.log_path for record in context.state.processes if context.host_of(record) is host]
    if any(real == place or real.startswith(place.rstrip("/") + "/") for place in places):
        return True
    return context.state.take_approval(approval_line(Path(real)), consume=False) is not None


@contextmanager
def readable_log(host: Host, path: str, context: ToolContext) -> Iterator[str]:
    """The path to read the log by, once :mod:`tools.readable`'s rule allows it: on the agent's machine through
    its open descriptor; on a remote host by its real path there, which must be the log of a process the agent
    started on that host, in the run's log directory there, or approved by a human."""
    if host.shares_agent_files:
        with readable_file(Path(path).expanduser(), context) as opened:
            yield str(opened)
        return
    real = host.real_path(path)
    if not may_read_on(host, real, context):
        raise NeedsApproval(
            f"reading {real} on {host.name} needs approval: it is not the log of a process the agent started there",
            evidence=[approval_line(Path(real))],
        )
    yield real


def diagnose_on_host(
    host: Host,
    path: str,
    hints: DiagnosisHints | None = None,
    *,
    head_bytes: int = DEFAULT_HEAD_BYTES,
    tail_bytes: int = DEFAULT_TAIL_BYTES,
) -> Diagnosis:
    """Diagnose the log at ``path`` on ``host`` from its bounded head and tail."""
    facts = host.file_facts(path)
    window = host.read_window(path, head_bytes=head_bytes, tail_bytes=tail_bytes)
    return diagnose_window(window, path, None if facts is None else facts.age_seconds, hints)
