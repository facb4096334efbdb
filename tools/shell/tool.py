"""The shell tool: every command runs confined in a sandbox; what the sandbox cannot allow asks a human.

The gate is the operating system, not a reading of the command: with the sandbox (bubblewrap, see
:mod:`tools.shell.confine`) a command can write only inside the writable roots, cannot see the state
directory or the user's credentials, can signal only its own processes and can reach only the engines
the agent started. A command that truly needs more (installing a package, a system path, a process the
agent did not start) is called again with ``outside_sandbox`` saying what it needs: that is a question to
a human, with the exact command and the guard's reading of it (:mod:`tools.shell.guard`, an explanation
only). Where no sandbox can run, only read-only diagnostics run (:mod:`tools.shell.allowlist`); every
other command asks. An approval is used once: the same command runs once, outside the sandbox.

On a remote host (``host`` argument) there is no sandbox: bubblewrap confines processes on the agent's own
machine. The remote host is treated as one where no sandbox can run, the same rule: read-only diagnostics
from the allow-list run (files they read must be logs of processes the agent started there, or approved), and
every other command is a question to a human, with the guard's reading of it made with that host's facts (its
home, the run's directory there, symbolic links resolved there, the processes the agent started there). What
runs, runs on the remote host through its helper, in a process group of its own that is killed whole on
timeout and when the connection drops, with its output capped.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from tools.base import NeedsApproval, Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.hosts.base import CommandResult, Host
from tools.hosts.sandbox import Confinement, SandboxUnavailable, sandbox_problem
from tools.logs.on_host import may_read_on
from tools.readable import may_read
from tools.redact import redact_text
from tools.shell.allowlist import allowlist_problem
from tools.shell.confine import shell_confinement
from tools.shell.explain import explain

SHELL_SYNTAX = re.compile(r"[;&|<>()$`*?\[\]{}~!#\n\\]|^\s*[A-Za-z_][A-Za-z0-9_]*=")
OUTPUT_CAP_BYTES = 2_000_000
REFUSALS = (
    "Read-only file system",
    "Operation not permitted",
    "Permission denied",
    "No such process",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
)


class ShellArgs(ToolArgs):
    command: str = Field(min_length=1, description="A bash command line")
    timeout_seconds: float = Field(default=60.0, gt=0, le=4 * 3600, description="Killed (whole group) after this")
    cwd: str | None = Field(default=None, description="Working directory (default: the first writable root)")
    host: str | None = Field(default=None, description="Host to run on (default: the run's first host)")
    outside_sandbox: str | None = Field(
        default=None,
        min_length=3,
        description="Only when the sandbox stopped this command and it truly needs more: what it needs (e.g. "
        "'installs a package into /usr', 'signals PID 123, which the agent did not start'). A human is asked "
        "first, with the exact command; if approved it runs once, unconfined.",
    )


class ShellOutput(ToolOutput):
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_seconds: float
    confinement: str = Field(description="sandbox, read-only allow-list, or approved by a human (question id)")
    hint: str | None = None
    approved_by_question: str | None = None


def evidence_line(command: str) -> str:
    return f"command: {command}"


def _working_directory(args: ShellArgs, context: ToolContext, host: Host) -> Path:
    if not host.shares_agent_files:  # a remote path: the host refuses to start in a missing directory
        return Path(args.cwd or host.working_dir())
    roots = context.settings.allowed_write_roots
    cwd = Path(args.cwd).expanduser() if args.cwd else (roots[0] if roots else Path.cwd())
    if not cwd.is_dir():
        raise ToolError(f"working directory {cwd} does not exist")
    return cwd


def _ask(args: ShellArgs, context: ToolContext, cwd: Path, why: str, host: Host) -> NeedsApproval:
    """The question for a human: the exact command, what it needs, and what the guard reads in it."""
    where = [] if host is context.host else [f"host: {host.name}"]
    return NeedsApproval(
        f"running this command outside the sandbox needs approval: {why}",
        evidence=[
            evidence_line(args.command),
            *where,
            f"needs: {why}",
            f"working directory: {cwd}",
            *explain(args, context, host),
        ],
    )


class ShellTool(Tool[ShellArgs, ShellOutput]):
    name = "shell"
    description = (
        "Run a bash command in a sandbox, with a timeout and an output cap: the file system is read-only "
        "except the writable roots (working directory), the state directory and credentials are hidden, only "
        "the command's own processes can be signalled, and only the engines the agent started can be reached "
        "(on their loopback ports). If the sandbox stops something the task truly needs (a package install, "
        "a system path, a process the agent did not start), call again with outside_sandbox saying what it "
        "needs: a human is asked first. Stop engines with stop_engine, not kill."
    )
    args_model = ShellArgs
    output_model = ShellOutput

    def timeout_for(self, args: ShellArgs) -> float:
        return args.timeout_seconds + 30.0

    def run(self, args: ShellArgs, context: ToolContext) -> ShellOutput:
        host = context.host_named(args.host)
        cwd = _working_directory(args, context, host)
        argv = host.translate(_argv(args.command))
        problem = _sandbox_problem(context, host)
        if args.outside_sandbox is None and problem is None:
            confinement = shell_confinement(context, args.timeout_seconds)
            try:
                result = self._run(argv, args, cwd, host, confinement)
            except SandboxUnavailable as error:
                raise ToolError(f"the sandbox did not start ({error}); the command was not run") from None
            return _output(args, result, "sandbox", _hint(result))
        if args.outside_sandbox is None:
            assert problem is not None
            refusal = allowlist_problem(args.command, cwd, _readable(context, host))
            if refusal is None:
                return _output(args, self._run(argv, args, cwd, host), "read-only allow-list (no sandbox)")
            why = f"no sandbox here ({problem}), and {refusal}"
        else:
            why = args.outside_sandbox
        approval = context.state.take_approval(evidence_line(args.command))
        if approval is None:
            raise _ask(args, context, cwd, why, host)
        context.checkpoint()  # the approval is used up before the command runs
        output = _output(args, self._run(argv, args, cwd, host), f"none: approved by {approval}")
        output.approved_by_question = approval
        return output

    @staticmethod
    def _run(
        argv: list[str], args: ShellArgs, cwd: Path, host: Host, confinement: Confinement | None = None
    ) -> CommandResult:
        return host.run(
            argv, timeout=args.timeout_seconds, cwd=cwd, output_cap_bytes=OUTPUT_CAP_BYTES, confinement=confinement
        )


def _sandbox_problem(context: ToolContext, host: Host) -> str | None:
    """Why no sandbox confines the command, or None."""
    if not host.shares_agent_files:
        return f"the sandbox confines commands on the agent's machine, not on {host.name}"
    return sandbox_problem() if context.settings.shell_sandbox == "auto" else "the sandbox is turned off"


def _readable(context: ToolContext, host: Host) -> Callable[[Path], bool]:
    """Which files the allow-listed readers may read: checked where the files are."""
    if host.shares_agent_files:
        return lambda path: may_read(path, context)
    return lambda path: may_read_on(host, str(path), context)


def _argv(command: str) -> list[str]:
    """A plain command runs as itself (so the simulated host can swap in its stand-ins); anything with shell
    syntax, or that shlex cannot split, runs through bash, which reports its own errors."""
    if not SHELL_SYNTAX.search(command):
        try:
            return shlex.split(command)
        except ValueError:
            pass
    return ["bash", "-c", command]


def _hint(result: CommandResult) -> str | None:
    if result.exit_code in (0, None) or not any(refusal in result.stderr for refusal in REFUSALS):
        return None
    return (
        "the sandbox may have stopped this (read-only file system outside the writable roots, no foreign "
        "processes, no network but the agent's engines); if the task truly needs it, call shell again with "
        "outside_sandbox saying what it needs, and a human will be asked"
    )


def _output(args: ShellArgs, result: CommandResult, confinement: str, hint: str | None = None) -> ShellOutput:
    return ShellOutput(
        command=redact_text(args.command),
        exit_code=result.exit_code,
        stdout=redact_text(result.stdout),
        stderr=redact_text(result.stderr),
        timed_out=result.timed_out,
        duration_seconds=round(result.duration_seconds, 3),
        confinement=confinement,
        hint=hint,
    )
