"""Asking a person, with the GPUs freed first.

A hung or still-starting engine holds its GPUs; while a person thinks about the question, nothing else can
use them. So the engine is stopped before the question is asked (the question is kept in
``pending_ask`` and asked once ``stop_engine`` returned), unless the evidence the person needs is the
live process itself (a stack dump of an unexplained hang, a load that is still progressing); the question
then says which process is left running and why.
"""

from __future__ import annotations

from agent.actions import Ask
from agent.policies.runbook.progress import RunbookProgress
from agent.state import ProjectState
from tools.records import LIVE_STATES

OPTIONS = ["retry", "KEY=VALUE settings to apply, then retry", "stop here"]


def _live_engine(state: ProjectState, progress: RunbookProgress) -> tuple[str, int] | None:
    """Name and pid of the engine of the last attempt, when it is still starting or hung."""
    if not progress.attempts or progress.attempts[-1].outcome not in ("hung", "timeout", "pending"):
        return None
    name = progress.attempts[-1].process
    record = next((item for item in state.processes if item.name == name and item.kind == "engine"), None)
    return (name, record.pid) if record is not None and record.state in LIVE_STATES else None


def ask(
    state: ProjectState,
    progress: RunbookProgress,
    kind: str,
    question: str,
    evidence: list[str],
    hypothesis: str,
    keep_alive_because: str | None = None,
    options: list[str] | None = None,
) -> Ask | None:
    """The question now (None: it is asked once the engine holding the GPUs has been stopped)."""
    live = _live_engine(state, progress)
    if live is not None and keep_alive_because is None:
        question += f" (I stopped {live[0]} first, so its GPUs are free while you look.)"
    elif live is not None:
        question += (
            f" {live[0]} (pid {live[1]}) is still running, because {keep_alive_because}; it holds its GPUs "
            f"until you answer."
        )
    built = Ask(
        question=question,
        evidence=evidence,
        hypothesis=hypothesis,
        question_kind=kind,
        context=f"bringing up {progress.served_model} with {progress.engine}; "
        f"{len(progress.attempts)} launch attempts so far",
        options=options or OPTIONS,
    )
    if live is not None and keep_alive_because is None:
        progress.pending_ask = built.model_dump()
        progress.current, progress.after_stop, progress.phase = live[0], "ask", "stop"
        return None
    progress.blocked_on = kind
    return built


def pending_question(progress: RunbookProgress) -> Ask:
    """The question kept while the GPUs were freed."""
    built = Ask.model_validate(progress.pending_ask)
    progress.pending_ask = None
    progress.blocked_on = built.question_kind
    return built
