"""What a human reads next to a command that asks to run outside the sandbox: the guard's reading of it.

The guard (:mod:`tools.shell.guard`) knows the usual ways a command destroys data or disturbs other
processes, and which processes are the agent's own; its findings go into the question's evidence so the
human sees at a glance what the command would do. It decides nothing: a command it finds harmless still
needs the approval, and one it cannot read is described as such.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tools.base import ToolContext
from tools.hosts.base import Host
from tools.processes import live_processes
from tools.shell.guard import GuardContext, judge
from tools.shell.parse import ParseError

if TYPE_CHECKING:
    from tools.shell.tool import ShellArgs


def owned_pids(context: ToolContext, host: Host | None = None) -> set[int]:
    """PIDs of live processes the agent started on ``host`` (default: the first), with every member of their
    process groups."""
    host = host or context.host
    owned: set[int] = set()
    for record in live_processes(context.state):
        if context.host_of(record) is not host or not host.status(record.pid, record.create_time).alive:
            continue
        owned.add(record.pid)
        members = host.run(["pgrep", "-g", str(record.pid)], timeout=10)
        owned.update(int(line) for line in members.stdout.split() if line.isdigit())
    return owned


def _pgrep(host: Host, pattern_args: list[str]) -> list[int] | None:
    result = host.run(["pgrep", *pattern_args], timeout=10)
    if result.exit_code not in (0, 1):  # 1: nothing matched; anything else: a usage error
        return None
    return [int(line) for line in result.stdout.split() if line.isdigit()]


def explain(args: ShellArgs, context: ToolContext, host: Host | None = None) -> list[str]:
    """Evidence lines: each danger the guard sees, or that it sees none (which proves nothing). On a remote host
    the guard reads the command with that host's facts (home, run directory, links, processes)."""
    host = host or context.host
    if host.shares_agent_files:
        cwd = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
        home, state_dir, variables = Path.home(), context.state_dir, dict(os.environ)
    else:
        cwd = Path(args.cwd or host.working_dir())
        home, state_dir = Path(host.home()), host.log_dir(context.logs_dir).parent
        variables = {"HOME": str(home)}
    guard = GuardContext(
        home=home,
        state_dir=state_dir,
        cwd=cwd,
        owned_pids=owned_pids(context, host),
        match_processes=lambda pattern: _pgrep(host, pattern),
        resolve=host.real_path,
        variables=variables,
    )
    try:
        dangers = judge(args.command, guard)
    except ParseError as error:
        return [f"guard: the command cannot be read ({error}); judge it yourself"]
    if not dangers:
        return ["guard: no known destructive pattern (this is a reading, not a proof)"]
    return [f"guard: {danger.command}: {danger.reason}" for danger in dangers]
