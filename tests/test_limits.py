"""Budgets: reaching one asks to extend it; answering 'extend' or raising it lets the run go on."""

from __future__ import annotations

import pytest

from agent.escalation import answer_question, record_question, settle_limit_questions
from agent.events import LimitReached, UsageError
from agent.limits import check_limits, exhausted_limits, extend_limits, set_limits
from agent.state import ProjectState


def _state(**limits: float) -> ProjectState:
    state = ProjectState(goal="g")
    for name, value in limits.items():
        setattr(state.limits, name, value)
    return state


def test_no_budget_exhausted_means_no_question() -> None:
    check_limits(_state(max_steps=5))


@pytest.mark.parametrize(
    ("field", "usage", "name"),
    [
        ("max_steps", "step", "steps"),
        ("max_wall_seconds", "wall_seconds", "wall"),
        ("max_cost_usd", "cost_usd", "cost"),
    ],
)
def test_each_budget_blocks_with_an_extend_question(field: str, usage: str, name: str) -> None:
    state = _state(**{field: 3})
    if usage == "step":
        state.step = 3
    else:
        setattr(state.usage, usage, 3.5)
    with pytest.raises(LimitReached) as raised:
        check_limits(state)
    ask = raised.value.ask
    assert ask.question_kind == "limit" and "extend?" in ask.question
    assert exhausted_limits(state) == [name]
    assert "extend" in ask.options


def test_extend_doubles_and_extend_n_adds() -> None:
    state = _state(max_steps=10)
    state.step = 10
    assert extend_limits(state, "extend") == ["steps: 10 of 20"]
    state.step = 20
    assert extend_limits(state, "Extend by 5") == ["steps: 20 of 25"]
    assert extend_limits(state, "no, stop") is None


def test_answering_a_limit_question_lifts_the_budget_and_other_answers_are_refused() -> None:
    state = _state(max_cost_usd=1.0)
    state.usage.cost_usd = 1.0
    with pytest.raises(LimitReached) as raised:
        check_limits(state)
    question = record_question(state, raised.value.ask)
    with pytest.raises(UsageError, match="extend"):
        answer_question(state, "sure why not")
    assert question.answer is None
    answer_question(state, "extend 4")
    assert state.limits.max_cost_usd == 5.0 and question.answer == "extend 4"
    check_limits(state)
    assert "budget extended" in state.findings[-1].summary


def test_raising_a_budget_on_the_command_line_settles_the_question() -> None:
    state = _state(max_steps=2)
    state.step = 2
    with pytest.raises(LimitReached) as raised:
        check_limits(state)
    record_question(state, raised.value.ask)
    assert settle_limit_questions(state, "raised") == []  # still exhausted: nothing settled
    assert set_limits(state, max_steps=50) == ["max steps 50"]
    settled = settle_limit_questions(state, "raised on the command line")
    assert [question.answer for question in settled] == ["raised on the command line"]
    assert state.pending_questions() == []
