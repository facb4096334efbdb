"""Telling whether the journal was changed by anything but the agent, and making sure the human knows.

:func:`journal_problems` walks the chain (see :mod:`agent.journal`): a record whose chain does not follow
from the record before it was edited, inserted or comes after a removed one; an unchained record after
chained ones was written by someone without the key; a state whose ``journal_head`` is in no record means
records were cut off the end (or the journal replaced). Problems a human already acknowledged (a
``tamper`` record, itself chained, names the lines it covers) are not reported again.

On resume, problems stop the run: the agent records a pinned finding and a ``tamper`` record, and asks
the human, whose explicit approval (``agent ask --approve``, or the answer ``resume``) lets the run go on
from the state as it is; any other answer keeps it stopped.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.actions import Ask
from agent.escalation import record_question
from agent.events import UsageError
from agent.journal import Journal, chain_value, split_chain
from agent.state import ProjectState
from agent.store import StateStore

TAMPER_WORD = "resume"


def journal_problems(path: Path, key: bytes, head: str | None) -> list[str]:
    """What is wrong with the journal at ``path`` (empty: every record is the agent's, as written)."""
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        lines = []
    problems: list[tuple[int, str]] = []
    previous, chained, acknowledged, seen_head = "", False, 0, head is None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = split_chain(line)
        if parts is None:  # a line torn by a crash is no record; a whole record without a chain is foreign
            if chained and _kind(line) is not None:
                problems.append((number, "a record without the agent's chain (written by someone else)"))
            continue
        body, chain = parts
        if chain_value(key, previous, body) != chain:
            problems.append((number, "the record does not follow from the one before (edited, inserted, or removed)"))
        elif _kind(body) == "tamper":
            acknowledged = max(acknowledged, _covered(body))
        chained, previous, seen_head = True, chain, seen_head or chain == head
    if not seen_head:
        problems.append((len(lines), "the newest record the state knows of is gone (records cut off or replaced)"))
    return [f"line {number}: {what}" for number, what in problems if number > acknowledged]


def _kind(body: bytes) -> str | None:
    try:
        record = json.loads(body)
    except ValueError:
        return None
    return record.get("kind") if isinstance(record, dict) else None


def _covered(body: bytes) -> int:
    value = json.loads(body).get("through_line", 0)
    return value if isinstance(value, int) else 0


def tamper_question(journal: Journal, problems: list[str]) -> Ask:
    """Journal the acknowledgment-to-be and return the question that stops the run."""
    lines = len(journal.path.read_bytes().split(b"\n")) if journal.path.exists() else 0
    journal.record("tamper", problems=problems, through_line=lines)
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return Ask(
        question=f"The journal was changed outside the agent ({shown}). Continue from the current state?",
        context="The run's record may have been edited. Look at the journal lines named above. Only the answer "
        f"{TAMPER_WORD!r} (or `agent ask --approve ID`) lets the run continue; any other answer keeps it stopped.",
        evidence=problems,
        options=[TAMPER_WORD, "stop"],
        hypothesis="Something other than the agent wrote into the state directory.",
        question_kind="tamper",
        approval_word=TAMPER_WORD,
    )


def stop_if_tampered(store: StateStore, state: ProjectState) -> None:
    """On resume: when the journal shows changes no human acknowledged, record a pinned finding and the
    question (the caller then stops, blocked). Raises :class:`UsageError` when the human denied going on."""
    refused = [
        question
        for question in state.questions
        if question.kind == "tamper" and question.answer is not None and question.approved is not True
    ]
    if refused and not state.pending_questions():
        raise UsageError(
            f"the run stays stopped: {refused[-1].id} (the journal was changed outside the agent) was answered "
            f"{refused[-1].answer!r}; start over with `agent run --new`, which archives this run"
        )
    problems = journal_problems(store.journal.path, store.secrets().key, state.history.journal_head)
    if not problems:
        return
    question = record_question(state, tamper_question(store.journal, problems))
    state.add_finding(f"the journal was changed outside the agent: {'; '.join(problems[:3])}", problems, pinned=True)
    state.status = "blocked"
    store.save(state)
    store.journal.record("event", event="blocked", step=state.step, status=state.status, question_id=question.id)
