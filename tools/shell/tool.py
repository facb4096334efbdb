"""The shell tool: run a command with a timeout and an output cap, unless it needs a human's approval.

The command runs through :meth:`Host.run` in its own process group, which is killed whole on timeout.
Before that, :mod:`tools.shell.guard` inspects it; a destructive command raises
:class:`NeedsApproval` with the exact command as evidence. Once a human answers that question with
"approve", the same command runs once.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pydantic import Field

from tools.base import NeedsApproval, Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.processes import live_processes
from tools.redact import redact_text
from tools.shell.guard import GuardContext, judge
from tools.shell.parse import ParseError

SHELL_SYNTAX = re.compile(r"[;&|<>()$`*?\[\]{}~!#\n\\]|^\s*[A-Za-z_][A-Za-z0-9_]*=")
APPROVING_ANSWERS = ("approve", "approved", "yes", "y", "ok", "go ahead")
OUTPUT_CAP_BYTES = 2_000_000


class ShellArgs(ToolArgs):
    command: str = Field(min_length=1, description="A bash command line")
    timeout_seconds: float = Field(default=60.0, gt=0, le=4 * 3600, description="Killed (whole group) after this")
    cwd: str | None = Field(default=None, description="Working directory (default: the agent's working directory)")


class ShellOutput(ToolOutput):
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_seconds: float
    approved_by_question: str | None = None


def _evidence_line(command: str) -> str:
    return f"command: {command}"


def _owned_pids(context: ToolContext) -> set[int]:
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


def _working_directory(args: ShellArgs, context: ToolContext) -> Path:
    roots = context.settings.allowed_write_roots
    cwd = Path(args.cwd).expanduser() if args.cwd else (roots[0] if roots else Path.cwd())
    if not cwd.is_dir():
        raise ToolError(f"working directory {cwd} does not exist")
    return cwd


class ShellTool(Tool[ShellArgs, ShellOutput]):
    name = "shell"
    description = (
        "Run a bash command with a timeout and an output cap; the whole process group is killed "
        "on timeout. Destructive commands (recursive deletes of /, home or the state directory, "
        "mkfs, dd onto devices, shutdown/reboot, GPU resets, killing processes the agent did not "
        "start) are not run: they escalate to a human for approval."
    )
    args_model = ShellArgs
    output_model = ShellOutput

    def timeout_for(self, args: ShellArgs) -> float:
        return args.timeout_seconds + 30.0

    def run(self, args: ShellArgs, context: ToolContext) -> ShellOutput:
        cwd = _working_directory(args, context)
        guard = GuardContext(
            home=Path.home(),
            state_dir=context.state_dir,
            cwd=cwd,
            owned_pids=_owned_pids(context),
            match_processes=lambda pattern: _pgrep(context, pattern),
        )
        try:
            dangers = judge(args.command, guard)
        except ParseError as error:
            raise ToolError(f"cannot parse the command ({error}); it was not run") from None
        approval = None
        if dangers:
            approval = context.state.take_approval(_evidence_line(args.command), APPROVING_ANSWERS)
            if approval is None:
                reasons = "; ".join(dict.fromkeys(danger.reason for danger in dangers))
                raise NeedsApproval(
                    f"the command needs approval: {reasons}",
                    evidence=[
                        _evidence_line(args.command),
                        *(f"{danger.command}: {danger.reason}" for danger in dangers),
                    ],
                    options=["approve", "deny"],
                )
            context.checkpoint()  # the approval is used up before the command runs
        argv = ["bash", "-c", args.command] if SHELL_SYNTAX.search(args.command) else shlex.split(args.command)
        result = context.host.run(
            context.host.translate(argv), timeout=args.timeout_seconds, cwd=cwd, output_cap_bytes=OUTPUT_CAP_BYTES
        )
        return ShellOutput(
            command=redact_text(args.command),
            exit_code=result.exit_code,
            stdout=redact_text(result.stdout),
            stderr=redact_text(result.stderr),
            timed_out=result.timed_out,
            duration_seconds=round(result.duration_seconds, 3),
            approved_by_question=approval,
        )
