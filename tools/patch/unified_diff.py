"""Apply a unified diff to one file's text, strictly: every context and removed line must match.

Hunks are applied in order; a hunk whose lines are not found at the stated position is searched
for nearby (like ``patch`` with offsets but no fuzz). Anything that does not apply exactly is an
error naming the hunk, so a stale diff never half-applies.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = "\\ No newline at end of file"


class DiffError(Exception):
    """The diff is malformed or does not apply to the file as it is now."""


@dataclass
class Hunk:
    old_start: int
    header: str
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)


def _strip_prefix(name: str) -> str:
    name = name.split("\t", 1)[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_hunks(diff_text: str) -> tuple[list[Hunk], list[str]]:
    """Parse the hunks of a single-file unified diff; also return the file names in its headers."""
    hunks: list[Hunk] = []
    names: list[str] = []
    current: Hunk | None = None
    lines = diff_text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        bare = line.rstrip("\r\n")
        following = lines[number] if number < len(lines) else ""
        if bare.startswith("--- ") and following.startswith("+++ "):
            names.append(_strip_prefix(bare[4:]))
            current = None
            continue
        if bare.startswith("+++ ") and current is None:
            names.append(_strip_prefix(bare[4:]))
            continue
        match = HUNK_HEADER.match(bare)
        if match:
            current = Hunk(old_start=int(match.group(1)), header=bare)
            hunks.append(current)
            continue
        if current is None:
            continue  # preamble such as "diff --git" or "index" lines
        if bare == NO_NEWLINE:
            _drop_last_newline(current, lines[number - 2] if number >= 2 else "")
        elif line.startswith(" ") or line in ("\n", "\r\n"):
            text = line[1:] if line.startswith(" ") else line
            current.old_lines.append(text)
            current.new_lines.append(text)
        elif line.startswith("-"):
            current.old_lines.append(line[1:])
        elif line.startswith("+"):
            current.new_lines.append(line[1:])
        else:
            raise DiffError(f"line {number} of the diff is not part of a hunk: {bare[:80]!r}")
    if not hunks:
        raise DiffError("no hunks found; expected a unified diff with '@@ -a,b +c,d @@' headers")
    if len({name for name in names if name != "/dev/null"}) > 2:
        raise DiffError("the diff touches several files; send one diff per file")
    return hunks, names


def _drop_last_newline(hunk: Hunk, previous_line: str) -> None:
    for lines in (
        (hunk.old_lines, hunk.new_lines)
        if previous_line.startswith(" ")
        else (hunk.old_lines,)
        if previous_line.startswith("-")
        else (hunk.new_lines,)
    ):
        if lines and lines[-1].endswith("\n"):
            lines[-1] = lines[-1].rstrip("\r\n")


def apply_diff(original: str, diff_text: str) -> str:
    """Return ``original`` with the diff applied; raise DiffError if any hunk does not match exactly."""
    hunks, _ = parse_hunks(diff_text)
    source = original.splitlines(keepends=True)
    result: list[str] = []
    position = 0  # index in source of the first line not yet copied
    for index, hunk in enumerate(hunks, start=1):
        wanted = max(hunk.old_start - 1, 0) if hunk.old_lines else hunk.old_start
        found = _locate(source, hunk.old_lines, wanted, position)
        if found is None:
            first = hunk.old_lines[0].rstrip() if hunk.old_lines else ""
            raise DiffError(
                f"hunk {index} ({hunk.header}) does not apply: its context/removed lines are not "
                f"in the file at or after line {position + 1} (first expected line: {first!r}); "
                "re-read the file and regenerate the diff"
            )
        result.extend(source[position:found])
        result.extend(hunk.new_lines)
        position = found + len(hunk.old_lines)
    result.extend(source[position:])
    return "".join(result)


def _locate(source: list[str], block: list[str], wanted: int, floor: int) -> int | None:
    """Index where ``block`` occurs, preferring the one nearest ``wanted``, never before ``floor``."""
    size = len(block)
    if size == 0:
        return min(max(wanted, floor), len(source))
    candidates = [start for start in range(floor, len(source) - size + 1) if source[start : start + size] == block]
    if not candidates:
        return None
    return min(candidates, key=lambda start: abs(start - wanted))


def make_diff(before: str, after: str, path: str) -> str:
    """A unified diff from ``before`` to ``after`` with a/ and b/ file headers."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path.lstrip('/')}",
        tofile=f"b/{path.lstrip('/')}",
    )
    return "".join(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n" for line in lines)
