"""What a human reads next to a command that asks to run outside the sandbox: the guard's reading of it.

The guard (:mod:`tools.shell.guard`) knows the usual ways a command destroys data or disturbs other
processes, and which processes are the agent's own; its findings go into the question's evidence so the
human sees at a glance what the command would do. It decides nothing: a command it finds harmless still
needs the approval, and one it cannot read is described as such.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tools.base import ToolContext
from tools.processes import live_processes
from tools.shell.guard import GuardContext, judge
from tools.shell.parse import ParseError

if TYPE_CHECKING:
    from tools.shell.tool import ShellArgs


def owned_pids(context: ToolContext) -> set[int]:
    """PIDs of live processes the agent started, with every member of their process groups."""
    owned: set[int] = set()
    for record in live_processes(context.state):
        if not context.host.status(record.pid, record.create_time).alive:
            continue
        owned.add(record.pid)
        members = context.host.run(["pgrep", "-g", str(record.pid)], timeout=10)
        owned.update(int(line) for line in members.stdout.split() if line.isdigit())
    return owned


def _pgrep(context: ToolContext, pattern_args: list[str]) -> list[int] | None:
    result = context.host.run(["pgrep", *pattern_args], timeout=10)
    if result.exit_code not in (0, 1):  # 1: nothing matched; anything else: a usage error
        return None
    return [int(line) for line in result.stdout.split() if line.isdigit()]


def explain(args: ShellArgs, context: ToolContext) -> list[str]:
    """Evidence lines: each danger the guard sees, or that it sees none (which proves nothing)."""
    cwd = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
    guard = GuardContext(
        home=Path.home(),
        state_dir=context.state_dir,
        cwd=cwd,
        owned_pids=owned_pids(context),
        match_processes=lambda pattern: _pgrep(context, pattern),
    )
    try:
        dangers = judge(args.command, guard)
    except ParseError as error:
        return [f"guard: the command cannot be read ({error}); judge it yourself"]
    if not dangers:
        return ["guard: no known destructive pattern (this is a reading, not a proof)"]
    return [f"guard: {danger.command}: {danger.reason}" for danger in dangers]
