"""Running a command confined: the launcher line (process cap, resource limits, bubblewrap) and what
lives beside it for the command's lifetime (the control group, the loopback relays)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tools.hosts.sandbox.bwrap import bwrap_argv, probe_problem
from tools.hosts.sandbox.cgroup import create_pids_group, remove_group
from tools.hosts.sandbox.confinement import Confinement, SandboxUnavailable
from tools.hosts.sandbox.relay import HostRelay
from tools.redact import is_secret_name

# Joins the control group named by $0, then becomes the rest of the line (so nothing escapes the count).
JOIN_GROUP = 'echo $$ > "$0" && exec "$@"'


def sandbox_problem() -> str | None:
    """Why commands cannot be confined on this machine, or None when they can."""
    return probe_problem()


def _limits(confinement: Confinement) -> list[str]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    return [
        prlimit,
        f"--fsize={confinement.max_file_bytes}",
        f"--cpu={confinement.max_cpu_seconds}",
        f"--nofile={confinement.max_open_files}",
        "--core=0",
        "--",
    ]


def confined_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """The command's environment without the variables whose names say they hold secrets."""
    return {name: value for name, value in environment.items() if not is_secret_name(name)}


@contextmanager
def confined(confinement: Confinement, argv: list[str], cwd: Path | None) -> Iterator[tuple[list[str], bool]]:
    """The command line that runs ``argv`` confined, and whether the process cap is in force. The control
    group and relays are removed when the block ends (after the command has finished or been killed).
    Raises :class:`SandboxUnavailable` when no sandbox can run here."""
    problem = probe_problem()
    if problem is not None:
        raise SandboxUnavailable(problem)
    with ExitStack() as cleanup:
        relay_dir = None
        if confinement.relay_ports:
            relay_dir = Path(tempfile.mkdtemp(prefix="opsloop-relay-"))
            cleanup.callback(shutil.rmtree, relay_dir, True)
            relay = HostRelay(relay_dir, confinement.relay_ports, confinement.relay_targets)
            cleanup.callback(relay.close)
        command = [*_limits(confinement), *bwrap_argv(confinement, argv, cwd, relay_dir)]
        group = create_pids_group(confinement.max_processes)
        if group is not None:
            cleanup.callback(remove_group, group)
            command = ["/bin/sh", "-c", JOIN_GROUP, str(group / "cgroup.procs"), *command]
        yield command, group is not None
