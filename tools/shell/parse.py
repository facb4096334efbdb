"""Split a shell command line into the simple commands it would run, for the shell tool's guard.

Handles ``;``, ``&&``, ``||``, pipes, ``&``, newlines and subshell parentheses; redirections (their
targets are kept); command substitution ``$(...)``, backticks and ``<(...)`` (their contents are
parsed too, and the substitution becomes a placeholder word); and wrappers that run another command:
``sudo``, ``env``, ``nohup``, ``nice``, ``timeout``, ``xargs``, ``watch``, ``ssh``, ``eval`` and
``bash|sh|zsh -c '...'``. The guard errs on the side of asking: what it cannot see, it flags.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePath

SUBSTITUTION = "__command_substitution__"
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish"}
PUNCTUATION = "();<>|&\n"
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MAX_DEPTH = 6

# Wrapper name -> options that take a separate value (everything else starting with '-' is a flag).
WRAPPER_VALUE_OPTIONS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user", "--group"},
    "doas": {"-u", "-C"},
    "env": {"-u", "-C", "--unset", "--chdir"},
    "nohup": set(),
    "time": set(),
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "setsid": set(),
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p", "-P", "-u"},
    "stdbuf": {"-i", "-o", "-e"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "chrt": set(),
    "taskset": set(),
    "numactl": {"-C", "-N", "-m", "-p", "-i"},
    "unbuffer": set(),
    "xargs": {"-n", "-I", "-P", "-d", "-L", "-s", "-a", "-E", "--max-args", "--max-procs", "--delimiter"},
    "watch": {"-n", "--interval", "-d"},
}
SSH_VALUE_OPTIONS = {
    "-p",
    "-i",
    "-l",
    "-o",
    "-F",
    "-J",
    "-L",
    "-R",
    "-D",
    "-b",
    "-c",
    "-E",
    "-e",
    "-m",
    "-O",
    "-Q",
    "-S",
    "-W",
    "-w",
    "-B",
}


class ParseError(Exception):
    """The command line cannot be parsed (unbalanced quotes or substitutions)."""


@dataclass
class SimpleCommand:
    argv: list[str]
    redirects: list[str] = field(default_factory=list)
    args_from_stdin: bool = False  # xargs: the real arguments arrive at run time

    @property
    def name(self) -> str:
        return PurePath(self.argv[0]).name if self.argv else ""

    @property
    def text(self) -> str:
        return shlex.join(self.argv)


def extract_substitutions(text: str) -> tuple[str, list[str]]:
    """Replace $(...), <(...), >(...) and `...` (outside single quotes) by a placeholder word."""
    out: list[str] = []
    inner: list[str] = []
    index, quoted = 0, False
    while index < len(text):
        character = text[index]
        if character == "'" and not (index and text[index - 1] == "\\"):
            quoted = not quoted
        if not quoted and character in "$<>" and text[index + 1 : index + 2] == "(":
            depth, end = 1, index + 2
            while end < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            if depth:
                raise ParseError("unbalanced '(' in a command substitution")
            inner.append(text[index + 2 : end - 1])
            out.append(f" {SUBSTITUTION} " if character == "$" else f" {SUBSTITUTION}")
            index = end
            continue
        if not quoted and character == "`":
            end = text.find("`", index + 1)
            if end < 0:
                raise ParseError("unbalanced backtick")
            inner.append(text[index + 1 : end])
            out.append(SUBSTITUTION)
            index = end + 1
            continue
        out.append(character)
        index += 1
    return "".join(out), inner


def tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=PUNCTUATION)
    lexer.whitespace, lexer.whitespace_split, lexer.commenters = " \t\r", True, ""
    try:
        return list(lexer)
    except ValueError as error:
        raise ParseError(str(error)) from None


def _is_operator(token: str) -> bool:
    return bool(token) and all(character in PUNCTUATION for character in token)


def segments(tokens: list[str]) -> list[SimpleCommand]:
    commands, current = [], SimpleCommand(argv=[])
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if _is_operator(token) and ("<" in token or ">" in token):
            if current.argv and current.argv[-1].isdigit():
                current.argv.pop()  # a file-descriptor number such as the 2 in 2>&1
            if index + 1 < len(tokens) and not _is_operator(tokens[index + 1]):
                if not token.startswith("<<"):
                    current.redirects.append(tokens[index + 1])
                index += 1
        elif _is_operator(token):
            if current.argv or current.redirects:
                commands.append(current)
            current = SimpleCommand(argv=[])
        else:
            current.argv.append(token)
        index += 1
    if current.argv or current.redirects:
        commands.append(current)
    return commands


def parse(command: str, depth: int = 0) -> list[SimpleCommand]:
    """Every simple command the line would run, wrappers removed, nested scripts expanded."""
    if depth > MAX_DEPTH:
        raise ParseError("commands nested too deeply to inspect")
    text, substitutions = extract_substitutions(command)
    found: list[SimpleCommand] = []
    for inner in substitutions:
        found.extend(parse(inner, depth + 1))
    for segment in segments(tokens(text)):
        found.extend(_unwrap(segment, depth))
    return found


def _skip_options(argv: list[str], start: int, with_value: set[str]) -> int:
    index = start
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
        if argv[index] == "--":
            return index + 1
        index += 2 if argv[index] in with_value else 1
    return index


def _unwrap(command: SimpleCommand, depth: int) -> list[SimpleCommand]:
    argv = list(command.argv)
    while argv and ASSIGNMENT.match(argv[0]):
        argv.pop(0)
    if not argv:
        return [command] if command.redirects else []
    name = PurePath(argv[0]).name
    rest_of = SimpleCommand(argv=[], redirects=command.redirects, args_from_stdin=command.args_from_stdin)
    if name in SHELLS and "-c" in argv[1:]:
        position = argv.index("-c", 1)
        script = argv[position + 1] if position + 1 < len(argv) else ""
        return [*parse(script, depth + 1), *([rest_of] if command.redirects else [])]
    if name == "eval":
        return [*parse(" ".join(argv[1:]), depth + 1), *([rest_of] if command.redirects else [])]
    if name == "ssh":
        index = _skip_options(argv, 1, SSH_VALUE_OPTIONS) + 1  # the host
        return parse(" ".join(argv[index:]), depth + 1) if index < len(argv) else []
    if name == "watch":
        index = _skip_options(argv, 1, WRAPPER_VALUE_OPTIONS["watch"])
        return parse(" ".join(argv[index:]), depth + 1)
    if name in WRAPPER_VALUE_OPTIONS:
        index = _skip_options(argv, 1, WRAPPER_VALUE_OPTIONS[name])
        if name == "env":
            while index < len(argv) and ASSIGNMENT.match(argv[index]):
                index += 1
        if name == "timeout" and index < len(argv):
            index += 1  # the duration
        if name in ("taskset", "chrt") and index < len(argv):
            index += 1  # the mask or priority
        if name == "nice" and index < len(argv) and re.fullmatch(r"-?\d+", argv[index]):
            index += 1
        if index >= len(argv):
            return [SimpleCommand(argv=argv, redirects=command.redirects)]
        rest_of.argv = argv[index:]
        rest_of.args_from_stdin = command.args_from_stdin or name == "xargs"
        return _unwrap(rest_of, depth)
    return [SimpleCommand(argv=argv, redirects=command.redirects, args_from_stdin=command.args_from_stdin)]
