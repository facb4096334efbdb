"""Questions for the human: recording them when the run blocks, and recording the answers.

A question is asked once: blocking again on the same unanswered question (a resume without an
answer) reuses it. An answer is stored with the question and shown to the policy at its next
decision. Answers to a budget question (kind ``limit``) lift the budget immediately, so the state
shows the new limits before the run resumes (see :mod:`agent.limits`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from agent.actions import Ask
from agent.events import UsageError
from agent.limits import exhausted_limits, extend_limits
from agent.state import ProjectState, Question
from tools.document import utc_now

Decision = Literal["approve", "deny"]


def record_question(state: ProjectState, ask: Ask) -> Question:
    """Add the question to the state (or return the identical one still waiting for an answer)."""
    for question in state.pending_questions():
        if question.question == ask.question and question.kind == ask.question_kind:
            question.evidence, question.hypothesis = list(ask.evidence), ask.hypothesis
            return question
    question = Question(
        id=state.next_id("q", [item.id for item in state.questions]),
        question=ask.question,
        context=ask.context,
        evidence=list(ask.evidence),
        options=list(ask.options),
        hypothesis=ask.hypothesis,
        kind=ask.question_kind,
        approval_word=ask.approval_word,
    )
    state.questions.append(question)
    return question


def answer_question(
    state: ProjectState, answer: str, question_id: str | None = None, decision: Decision | None = None
) -> Question:
    """Record a human's answer on the given question, or on the oldest one still pending.

    A question that asks for approval is approved only by ``decision="approve"`` (``agent ask --approve``)
    or by an answer that is exactly its approval word (case and surrounding spaces aside); every other
    answer is a denial whose text the policy sees as guidance. Raises :class:`UsageError` when there is
    nothing to answer, the id is unknown, a decision is given for a question that asks for none, or a
    budget question gets an answer that does not say how to extend it.
    """
    answer = answer.strip()
    if not answer:
        raise UsageError("the answer is empty")
    pending = state.pending_questions()
    if question_id is None:
        if not pending:
            raise UsageError("no question is waiting for an answer")
        question = pending[0]
    else:
        matches = [item for item in state.questions if item.id == question_id]
        if not matches:
            known = ", ".join(item.id for item in pending) or "none pending"
            raise UsageError(f"no question with id {question_id} (pending: {known})")
        question = matches[0]
        if question.answer is not None:
            raise UsageError(f"question {question_id} was already answered: {question.answer!r}")
    if question.kind == "limit":
        changed = extend_limits(state, answer)
        if changed is None:
            raise UsageError(
                f"question {question.id} asks whether to extend the budget: answer 'extend' "
                "(doubles it) or 'extend N' (adds N), or resume with --max-steps / "
                "--max-wall-seconds / --max-cost-usd"
            )
        if changed:
            state.add_finding("budget extended by the operator: " + "; ".join(changed))
    if decision is not None and question.approval_word is None:
        raise UsageError(f"question {question.id} does not ask for an approval; answer it with --answer")
    if question.approval_word is not None:
        word = question.approval_word.casefold()
        question.approved = decision == "approve" or (decision is None and answer.casefold() == word)
    question.answer, question.answered_at, question.seen_by_policy = answer, utc_now(), False
    return question


def settle_limit_questions(state: ProjectState, reason: str) -> list[Question]:
    """Answer pending budget questions whose budgets are no longer exhausted (raised by flags)."""
    if exhausted_limits(state):
        return []
    settled = [question for question in state.pending_questions() if question.kind == "limit"]
    for question in settled:
        question.answer, question.answered_at, question.seen_by_policy = reason, utc_now(), False
    return settled


def answer_command(state_dir: Path, question_id: str | None = None, approval: bool = False) -> str:
    """The exact command a human runs to answer (the answer text goes between the quotes); for a question
    asking for approval, the commands that approve and deny it."""
    directory = shlex.quote(str(state_dir))
    if approval and question_id:
        return f"agent ask --approve {question_id} --state-dir {directory} (or --deny {question_id})"
    selector = f" --id {question_id}" if question_id else ""
    return f'agent ask --answer "..."{selector} --state-dir {directory}'


def resume_command(state_dir: Path) -> str:
    return f"agent resume {shlex.quote(str(state_dir / 'latest.json'))}"
