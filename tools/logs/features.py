"""Features of a failure for the learned classifier (:mod:`tools.logs.learned`).

Everything here comes from what diagnosis already extracted from the bounded window: the root cause
(its exception type, message and innermost frames), the failing component, the start-up phase the
failure came in, the engine, a bounded number of error lines near the failure and at the end of the
log, and the process facts. Text becomes normalised words (:mod:`tools.logs.wording`) and the word
families they mention (:mod:`tools.logs.concepts`), so that wording never seen before still shares
features with wording seen.

Feature names carry their source in front: ``t:`` words of the root cause's type and message (or of
the line the rules chose when there is no exception), ``b:`` pairs of adjacent words of it, ``m:`` its
word families, ``x:`` the exception type, ``f:`` words of the innermost frames, ``n:`` words and ``q:``
word families of error lines around the failure and at the end of the log, ``c:`` component, ``p:``
phase, ``e:`` engine, ``k:`` kind of root cause, ``l:`` lifecycle facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from pathlib import PurePosixPath

from tools.logs.concepts import concepts
from tools.logs.events import ErrorEvent
from tools.logs.prefixes import split_line
from tools.logs.window import LogWindow
from tools.logs.wording import words

NEARBY_BEFORE = 12
NEARBY_AFTER = 12
NEARBY_LINES = 16  # error lines taken around the failure
TAIL_LINES = 8  # error lines taken from the end of the log
TAIL_SCAN = 400  # lines looked at from the end
FRAME_COUNT = 4
LINE_CHARS = 300

_ERRORISH = re.compile(
    r"error|fail|exception|fatal|abort|killed|denied|refused|timed? ?out|not supported|unsupported|cannot|can't"
    r"|unable|invalid|must be|mismatch|segfault|core dumped|\bdied\b|\bexit",
    re.IGNORECASE,
)
_LEVELS = ("ERROR", "CRITICAL")


@dataclass(frozen=True)
class FailureContext:
    """What diagnosis knows about a failure besides the log text."""

    root: ErrorEvent | None
    component: str | None
    phase: str
    engine: str
    key_index: int | None  # the line the rules chose, when they chose one
    exit_code: int | None = None
    exited: bool = False
    stalled: bool = False
    ready_seen: bool = False
    ends_in_traceback: bool = False


def _errorish(line: str) -> bool:
    parts = split_line(line)
    return parts.level in _LEVELS or (parts.level is None and bool(_ERRORISH.search(parts.text)))


def _nearby_lines(window: LogWindow, center: int | None, skip: set[int]) -> list[str]:
    lines = window.lines
    chosen: list[int] = []
    if center is not None:
        for index in range(max(center - NEARBY_BEFORE, 0), min(center + NEARBY_AFTER + 1, len(lines))):
            if index not in skip and _errorish(lines[index]) and len(chosen) < NEARBY_LINES:
                chosen.append(index)
    tail: list[int] = []
    for index in range(len(lines) - 1, max(len(lines) - TAIL_SCAN, 0) - 1, -1):
        if len(tail) >= TAIL_LINES:
            break
        if index not in skip and index not in chosen and _errorish(lines[index]):
            tail.append(index)
    return [split_line(lines[index]).text[:LINE_CHARS] for index in chosen + tail]


def _frame_words(root: ErrorEvent) -> set[str]:
    found: set[str] = set()
    for frame in root.frames[:FRAME_COUNT]:
        found.update(words(frame.function))
        found.update(words(PurePosixPath(frame.path).stem))
    return found


def _lifecycle(context: FailureContext) -> list[str]:
    facts = []
    if context.exit_code is not None:
        facts.append("l:exit_signal" if context.exit_code < 0 or context.exit_code > 128 else "l:exit_code")
    if context.exited:
        facts.append("l:exited")
    if context.stalled:
        facts.append("l:stalled")
    if context.ready_seen:
        facts.append("l:after_ready")
    if context.ends_in_traceback:
        facts.append("l:ends_in_traceback")
    if context.root is None:
        facts.append("l:no_traceback")
    return facts


def has_error_text(window: LogWindow, context: FailureContext) -> bool:
    """There is an error to read: a root cause, or an error line the rules chose. A log whose only sign
    of failure is how the process ended gives the model nothing to read beyond that."""
    if context.root is not None:
        return True
    return context.key_index is not None and _errorish(window.lines[context.key_index])


def failure_features(window: LogWindow, context: FailureContext) -> list[str]:
    """The sorted, distinct features of one failure (see the module's docstring)."""
    root = context.root
    features: set[str] = {f"p:{context.phase}", f"e:{context.engine}", *_lifecycle(context)}
    skip: set[int] = set()
    if root is not None:
        primary = f"{root.type or ''} {root.message}"
        features.add(f"k:{root.kind}")
        features.add(f"c:{context.component or 'none'}")
        if root.type:
            features.add(f"x:{root.type.rsplit('.', 1)[-1]}")
        features.update(f"f:{word}" for word in _frame_words(root))
        skip.add(root.index)
        center: int | None = root.index
    elif context.key_index is not None:
        primary = split_line(window.lines[context.key_index]).text
        skip.add(context.key_index)
        center = context.key_index
    else:
        primary, center = "", None
    message = words(primary)
    features.update(f"t:{word}" for word in message)
    features.update(f"b:{first}_{second}" for first, second in pairwise(message))
    features.update(f"m:{family}" for family in concepts(message))
    for line in _nearby_lines(window, center, skip):
        nearby = words(line)
        features.update(f"n:{word}" for word in nearby)
        features.update(f"q:{family}" for family in concepts(nearby))
    return sorted(features)


_DESCRIPTIONS = {
    "t": "'{}'",
    "b": "'{}'",
    "m": "words about {}",
    "x": "a {}",
    "f": "frames in '{}'",
    "n": "'{}' nearby",
    "q": "words about {} nearby",
    "c": "component {}",
    "p": "phase {}",
    "e": "engine {}",
    "k": "a {} root cause",
    "l": "{}",
}


def describe(feature: str) -> str:
    """A feature in words, for the why of a diagnosis: ``m:memory`` is "words about memory"."""
    kind, _, value = feature.partition(":")
    return _DESCRIPTIONS.get(kind, "{}").format(value.replace("_", " "))
