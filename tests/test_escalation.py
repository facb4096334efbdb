"""Questions: recorded once, answered by id or oldest-first, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.actions import Ask
from agent.escalation import answer_command, answer_question, record_question, resume_command
from agent.events import UsageError
from agent.state import ProjectState


def test_the_same_unanswered_question_is_not_asked_twice() -> None:
    state = ProjectState(goal="g")
    first = record_question(state, Ask(question="Which GPU?", evidence=["a"]))
    again = record_question(state, Ask(question="Which GPU?", evidence=["b"]))
    assert first is again and again.evidence == ["b"] and len(state.questions) == 1
    other = record_question(state, Ask(question="Which port?"))
    assert [first.id, other.id] == ["q1", "q2"]


def test_answers_go_to_the_oldest_pending_question_or_the_named_one() -> None:
    state = ProjectState(goal="g")
    record_question(state, Ask(question="one"))
    record_question(state, Ask(question="two"))
    assert answer_question(state, "second", "q2").question == "two"
    answered = answer_question(state, "  first  ")
    assert answered.id == "q1" and answered.answer == "first" and answered.answered_at
    assert not answered.seen_by_policy


@pytest.mark.parametrize(
    ("answer", "question_id", "message"),
    [
        ("x", None, "no question is waiting"),
        ("", None, "empty"),
        ("x", "q9", "no question with id q9"),
    ],
)
def test_bad_answers_are_usage_errors(answer: str, question_id: str | None, message: str) -> None:
    state = ProjectState(goal="g")
    with pytest.raises(UsageError, match=message):
        answer_question(state, answer, question_id)


def test_an_answered_question_cannot_be_answered_again() -> None:
    state = ProjectState(goal="g")
    record_question(state, Ask(question="one"))
    answer_question(state, "yes")
    with pytest.raises(UsageError, match="already answered"):
        answer_question(state, "no", "q1")


def test_commands_quote_the_state_directory() -> None:
    directory = Path("/srv/ops state")
    expected = "agent ask --answer \"...\" --id q2 --state-dir '/srv/ops state'"
    assert answer_command(directory, "q2") == expected
    assert resume_command(directory) == "agent resume '/srv/ops state/latest.json'"
