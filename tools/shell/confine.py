"""The sandbox of a shell command: what it may write, what it must not see, which engines it may reach.

Writable: the configured write roots, except their ``.git`` directories and the agent's own code (kept
read-only). Hidden: the state directory (state, journal, secrets, backups; its ``logs/`` is shown again
read-only), the agent's configuration, the user's credentials (SSH keys, cloud and registry logins) and
the system's password hashes. Network: loopback ports of the live processes the agent started, nothing
else. Everything else on the machine is visible read-only.
"""

from __future__ import annotations

from pathlib import Path

from tools.base import ToolContext
from tools.hosts.sandbox import Confinement
from tools.off_limits import secret_paths
from tools.processes import live_processes


def shell_confinement(context: ToolContext, timeout_seconds: float) -> Confinement:
    settings = context.settings
    roots = list(settings.allowed_write_roots)
    ports = sorted({record.port for record in live_processes(context.state) if record.port is not None})
    return Confinement(
        writable=roots,
        hidden=[context.state_dir, *settings.hidden_paths, *secret_paths(Path.home())],
        read_only=[*settings.protected_paths, *(root / ".git" for root in roots)],
        exposed=[context.state_dir / "logs"],
        relay_ports=ports,
        max_processes=settings.shell_max_processes,
        max_cpu_seconds=max(int(timeout_seconds * 2), 10),
    )
