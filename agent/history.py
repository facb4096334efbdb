"""Keeping the state document a hand-over of fixed size: older records move to the journal.

The document holds current knowledge: pinned findings, the most recent findings and records, every
process still running, every patch still applied, every question still open. When a list grows past
its cap plus some slack, its oldest entries (never a live process, an applied patch, an open question
or an open task) are written to the journal as one ``history`` record and dropped from the document,
so saving costs the same at step 5,000 as at step 100. The journal keeps the whole history: before
the document is written, the store journals what it is about to drop (after a crash in between, a
history record may repeat; finding numbers and record ids tell the copies apart).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from agent.journal import Journal
from agent.state import ProjectState

# List -> how many entries that may move stay in the document. Moving starts a quarter of that later
# (the slack), so the journal gets one record per few new entries rather than one per save.
KEEP: dict[str, int] = {
    "findings": 30,
    "pinned_findings": 20,
    "benchmarks": 6,
    "processes": 10,
    "patches": 10,
    "questions": 10,
    "tasks": 20,
    "notifications": 20,
}
HISTORY_KIND = "history"

Item = TypeVar("Item", bound=BaseModel)


def _split(items: list[Item], keep: int, movable: Callable[[Item], bool]) -> tuple[list[Item], list[Item]]:
    """(kept, moved): the oldest movable entries beyond ``keep`` movable ones, once the slack is used up."""
    candidates = [index for index, item in enumerate(items) if movable(item)]
    if len(candidates) <= keep + max(2, keep // 4):
        return items, []
    leaving = set(candidates[: len(candidates) - keep])
    return (
        [item for index, item in enumerate(items) if index not in leaving],
        [item for index, item in enumerate(items) if index in leaving],
    )


def _always(item: BaseModel) -> bool:
    return True


def compact(state: ProjectState) -> dict[str, list[dict[str, Any]]]:
    """Drop the entries beyond the caps from ``state``; returns them (as JSON) by list name, for the journal."""
    moved: dict[str, Sequence[BaseModel]] = {}
    pinned, unpinned = (
        [item for item in state.findings if item.pinned],
        [item for item in state.findings if not item.pinned],
    )
    kept_pinned, moved_pinned = _split(pinned, KEEP["pinned_findings"], _always)
    kept_unpinned, moved_unpinned = _split(unpinned, KEEP["findings"], _always)
    if moved_pinned or moved_unpinned:
        kept = {id(item) for item in (*kept_pinned, *kept_unpinned)}
        moved["findings"] = [item for item in state.findings if id(item) not in kept]
        state.findings = [item for item in state.findings if id(item) in kept]
    state.benchmarks, moved["benchmarks"] = _split(state.benchmarks, KEEP["benchmarks"], _always)
    state.processes, moved["processes"] = _split(
        state.processes, KEEP["processes"], lambda record: record.state in ("exited", "stopped")
    )
    state.patches, moved["patches"] = _split(state.patches, KEEP["patches"], lambda record: record.reverted)
    state.questions, moved["questions"] = _split(
        state.questions, KEEP["questions"], lambda question: question.answer is not None
    )
    state.tasks, moved["tasks"] = _split(
        state.tasks, KEEP["tasks"], lambda task: task.status in ("done", "failed", "skipped")
    )
    state.notifications, moved["notifications"] = _split(state.notifications, KEEP["notifications"], _always)
    journal_form = {name: [item.model_dump(mode="json") for item in items] for name, items in moved.items() if items}
    for name, items in journal_form.items():
        state.history.moved[name] = state.history.moved.get(name, 0) + len(items)
    return journal_form


def move_to_journal(state: ProjectState, journal: Journal) -> None:
    """Compact ``state`` and journal what left it. If the journal cannot be written, the document is left
    as it was (and the error propagates): nothing leaves the document without being in the journal."""
    lists = {
        name: list(getattr(state, name))
        for name in ("findings", "benchmarks", "processes", "patches", "questions", "tasks", "notifications")
    }
    counts = dict(state.history.moved)
    moved = compact(state)
    if not moved:
        return
    try:
        journal.record(HISTORY_KIND, step=state.step, **moved)
    except BaseException:
        for name, items in lists.items():
            setattr(state, name, items)
        state.history.moved = counts
        raise
