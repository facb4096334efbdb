"""What the commands share: exit codes, locating the state, printing, and error handling."""

from __future__ import annotations

import json
import os
import pwd
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.events import UsageError
from agent.store import LATEST_FILE, StateWriteError
from tools.redact import redact_text, redact_value

EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_BLOCKED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CODES = {"done": EXIT_DONE, "blocked": EXIT_BLOCKED, "limit": EXIT_BLOCKED, "failed": EXIT_FAILED}
DEFAULT_STATE_DIR = Path("state")
SYSTEM_DIRECTORIES = {
    Path(name)
    for name in (
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/sbin",
        "/usr/share",
        "/var",
        "/var/lib",
        "/var/log",
        "/var/tmp",
        "/home",
    )
}

STATE_DIR_HELP = "State directory (default ./state)."
STATE_ARGUMENT_HELP = "A state directory, or a state file in it (e.g. state/latest.json)."


def check_state_directory(directory: Path) -> Path:
    """``directory`` if it may hold a run: never ``/``, a home directory or a system directory, whose
    contents the agent would make private and whose files a run would be mixed with."""
    real = Path(os.path.realpath(directory))
    homes = {Path(os.path.realpath(Path.home()))} | {Path(os.path.realpath(entry.pw_dir)) for entry in pwd.getpwall()}
    if real == Path("/") or real in homes or real in SYSTEM_DIRECTORIES:
        kind = (
            "the root directory" if real == Path("/") else "a home directory" if real in homes else "a system directory"
        )
        raise UsageError(f"--state-dir {directory} is {kind}; give a directory of its own, e.g. ./state")
    return directory


def locate(target: Path | None, state_dir: Path | None) -> tuple[Path, Path]:
    """(state directory, state file) from the optional argument and ``--state-dir``."""
    directory, file = _locate(target, state_dir)
    return check_state_directory(directory), file


def _locate(target: Path | None, state_dir: Path | None) -> tuple[Path, Path]:
    if target is None:
        directory = (state_dir or DEFAULT_STATE_DIR).absolute()
        return directory, directory / LATEST_FILE
    target = target.absolute()
    is_file = target.is_file() or (not target.exists() and target.suffix == ".json")
    directory, file = (target.parent, target) if is_file else (target, target / LATEST_FILE)
    if state_dir is not None and state_dir.absolute() != directory:
        raise UsageError(f"{target} is not in --state-dir {state_dir}; give one or the other")
    return directory, file


def host_overrides(hosts: list[str] | None, ssh_config: Path | None) -> dict[str, Any]:
    """The command-line layer for ``--host`` and ``--ssh-config`` (only what was given; paths made absolute)."""
    overrides: dict[str, Any] = {"hosts": list(hosts)} if hosts else {}
    if ssh_config is not None:
        overrides["ssh"] = {"config": str(ssh_config.expanduser().absolute())}
    return overrides


def scenario_argument(sim: str | None) -> str | None:
    """``--sim``: a scenario file becomes its absolute path (the run may resume from elsewhere); a
    built-in scenario keeps its name."""
    if sim is None:
        return None
    return str(Path(sim).absolute()) if Path(sim).is_file() else sim


def progress(line: str) -> None:
    typer.echo(redact_text(f"· {line}"), err=True)


def print_text(text: str) -> None:
    """Everything printed goes through the redactor: the in-memory state still holds what tools saw."""
    typer.echo(redact_text(text), nl=not text.endswith("\n"))


def print_json(value: Any) -> None:
    typer.echo(json.dumps(redact_value(value), indent=2, ensure_ascii=False, default=str))


@contextmanager
def usage_errors() -> Iterator[None]:
    """Turn operator mistakes into one line on stderr and exit code 2, and a state that cannot be
    written (disk full, read-only) into one line and exit code 1."""
    try:
        yield
    except UsageError as error:
        typer.echo(f"agent: error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except StateWriteError as error:
        typer.echo(f"agent: error: {error}", err=True)
        raise typer.Exit(EXIT_FAILED) from None


def finish(code: int) -> None:
    sys.stdout.flush()
    raise typer.Exit(code)


# Options shared by several commands, declared once so they read the same everywhere.
StateDirOption = Annotated[Path | None, typer.Option("--state-dir", help=STATE_DIR_HELP)]
StateArgument = Annotated[Path | None, typer.Argument(help=STATE_ARGUMENT_HELP, show_default=False)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
SimOption = Annotated[str | None, typer.Option("--sim", help="Simulated host: scenario name or file.")]
NotifyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--notify",
        help="Where to send notifications (repeatable): webhook:URL, slack:URL, ntfy:URL, "
        "email:ADDRESS, command:CMD, desktop.",
    ),
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="Config file (TOML; default: agent.toml in the state directory).")
]
HostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--host",
        help="A machine to operate over SSH (repeatable; node 0 first): ssh://[user@]host[:port] or a Host "
        "alias from the SSH configuration.",
    ),
]
SshConfigOption = Annotated[
    Path | None, typer.Option("--ssh-config", help="SSH configuration file (default: $HOME/.ssh/config).")
]
MaxStepsOption = Annotated[int | None, typer.Option("--max-steps", help="Step budget.")]
MaxWallOption = Annotated[float | None, typer.Option("--max-wall-seconds", help="Wall-time budget (s).")]
MaxCostOption = Annotated[float | None, typer.Option("--max-cost-usd", help="Model-spending budget (USD).")]
AnswerOption = Annotated[str | None, typer.Option("--answer", help="Answer to the pending question.")]
QuestionIdOption = Annotated[
    str | None, typer.Option("--id", help="Which question to answer (default: the oldest pending one).")
]
