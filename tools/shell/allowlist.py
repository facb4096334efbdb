"""Where no sandbox can run: the read-only diagnostics a command line may consist of without asking.

A command line passes only when every command in it is on the list, with options that only read
(``nvidia-smi -q``, not ``nvidia-smi -pm 1``; ``dmesg``, not ``dmesg -c``), files it reads are inside the
readable paths (managed logs, engine log directories, paths a human approved), and nothing is hidden
from inspection: no substitution, no variable, no assignment, no redirection other than to
``/dev/null`` or between output streams, no background job. Everything else is a question to a human.
This is a list of what is allowed, never of what is forbidden: a command it does not know is not run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from tools.shell.parse import ParseError, SimpleCommand, extract_substitutions, segments, tokens

ANY_ARGUMENTS = {"ps", "ss", "df", "free", "uptime", "uname", "nproc", "lscpu", "lsblk", "lspci", "id", "whoami"}
ANY_ARGUMENTS |= {"pwd", "echo", "true", "which", "ls", "du", "stat", "top", "ibstat", "sleep"}
EXACT = {"numactl": [["-H"], ["--hardware"], ["--show"]], "nvcc": [["--version"], ["-V"]]}
NO_ARGUMENTS = {"hostname", "date", "env", "printenv"}
FILE_READERS = {"cat", "head", "tail", "wc", "grep", "sort", "uniq", "cut", "tr"}
READER_VALUE_OPTIONS = {"-n", "-c", "--lines", "--bytes", "-e", "-f", "-m", "-A", "-B", "-C", "-d", "-k", "-t"}
READER_VALUE_OPTIONS |= {"--regexp", "--file", "--max-count", "--delimiter", "--fields", "--key"}
DMESG_CHANGES = re.compile(r"^-(-clear|-console-\w+|-read-clear|[a-zA-Z]*[cCDEn][a-zA-Z]*)$")
NVIDIA_SMI_READS = re.compile(
    r"^(-L|--list-gpus|-q|--query|-x|--xml-format|-d|-i|-l|-lms|-f|-u|--unit|"
    r"--(id|display|query-gpu|query-compute-apps|query-accounted-apps|format|loop|filename)=.*)$"
)
NVIDIA_SMI_SUBCOMMANDS = {"topo": {"-m", "--matrix"}, "nvlink": {"-s", "--status", "-i"}}
SAFE_REDIRECT_TARGETS = {"/dev/null", "1", "2", "&1", "&2"}
PIPE_OPERATORS = {"|", "||", "&&", ";", "\n"}

Readable = Callable[[Path], bool]


def _reader_problem(command: SimpleCommand, cwd: Path, readable: Readable) -> str | None:
    argv, operands, index = command.argv, [], 1
    while index < len(argv):
        item = argv[index]
        if item in READER_VALUE_OPTIONS:
            if item in ("-f", "--file") and index + 1 < len(argv):
                operands.append(argv[index + 1])
            index += 2
            continue
        if not item.startswith("-") or item == "-":
            operands.append(item)
        index += 1
    if command.name == "grep" and not any(option in argv for option in ("-e", "-f", "--regexp", "--file")):
        operands = operands[1:]  # the pattern
    if command.name == "uniq" and len(operands) > 1:
        return "uniq with two operands writes its output file"
    if command.name == "sort" and any(item.startswith(("-o", "--output")) for item in argv[1:]):
        return "sort -o writes a file"
    for operand in operands:
        path = Path(os.path.normpath(cwd / Path(operand).expanduser()))
        if operand != "-" and not readable(Path(os.path.realpath(path))):
            return f"{command.name} reads {operand}, which is not a managed log or a path a human approved"
    return None


def _command_problem(command: SimpleCommand, cwd: Path, readable: Readable) -> str | None:
    name, arguments = command.name, command.argv[1:]
    if bad := [target for target in command.redirects if target not in SAFE_REDIRECT_TARGETS]:
        return f"redirects to {bad[0]}"
    if name == "ss" and any(
        item in ("-K", "--kill") or re.fullmatch(r"-[a-zA-Z]*K[a-zA-Z]*", item) for item in arguments
    ):
        return "ss -K closes sockets"
    if name in ANY_ARGUMENTS or arguments in EXACT.get(name, []):
        return None
    if name in NO_ARGUMENTS:
        return (
            None
            if not arguments or (name == "date" and all(item.startswith("+") for item in arguments))
            else (f"{name} with arguments can change the system or run another command")
        )
    if name in FILE_READERS:
        return _reader_problem(command, cwd, readable)
    if name == "dmesg":
        changing = [item for item in arguments if DMESG_CHANGES.match(item)]
        return f"dmesg {changing[0]} changes the kernel log or console" if changing else None
    if name == "nvidia-smi":
        allowed = NVIDIA_SMI_SUBCOMMANDS.get(arguments[0]) if arguments else None
        reads = (
            all(item in allowed or not item.startswith("-") for item in arguments[1:])
            if allowed is not None
            else all(NVIDIA_SMI_READS.match(item) or not item.startswith("-") for item in arguments)
        )
        return None if reads else "nvidia-smi with options that change the GPUs (or that are not known to only read)"
    if name in ("pip", "pip3") and arguments[:1] in (["list"], ["show"], ["freeze"], ["--version"]):
        return None
    if re.fullmatch(r"python[\d.]*", name) and (
        arguments in (["--version"], ["-V"]) or arguments[:3] in (["-m", "pip", "list"], ["-m", "pip", "freeze"])
    ):
        return None
    return f"{name or 'the command'} is not one of the read-only diagnostics that run without a sandbox"


def allowlist_problem(command_line: str, cwd: Path, readable: Readable) -> str | None:
    """Why this line may not run unconfined without asking (None: it is read-only diagnostics only)."""
    if "$" in command_line or "`" in command_line:
        return "it uses a substitution or a variable, whose value cannot be checked before it runs"
    try:
        text, substitutions = extract_substitutions(command_line)
        words = tokens(text)
    except ParseError as error:
        return f"it cannot be parsed ({error})"
    if substitutions:
        return "it uses a command substitution"
    operators = {word for word in words if word and all(character in "();<>|&\n" for character in word)}
    if bad := [word for word in operators if word not in PIPE_OPERATORS and "<" not in word and ">" not in word]:
        return f"it uses {bad[0]!r} (a background job or a subshell)"
    for command in segments(words):
        if command.argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", command.argv[0]):
            return "it sets a variable for the command"
        if problem := _command_problem(command, cwd, readable):
            return problem
    return None
