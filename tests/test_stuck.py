"""Stuck detection: repeated identical calls or no movement nudge once, then escalate."""

from __future__ import annotations

import pytest

from agent.actions import Observation
from agent.events import Blocked
from agent.state import ProjectState
from agent.stuck import StuckDetector
from tools.base import ToolResult


def _poll(output: dict[str, object], duration: float = 0.1) -> list[Observation]:
    result = ToolResult(tool="engine_status", ok=True, output=output, duration_seconds=duration)
    return [Observation(call_id="c", tool="engine_status", arguments={"name": "engine"}, result=result)]


def test_identical_calls_with_identical_results_nudge_then_escalate() -> None:
    detector, state = StuckDetector(repeat_limit=3, idle_limit=50), ProjectState(goal="g")
    same = {"state": "loading", "log_bytes": 100}
    assert detector.check(state, _poll(same, 0.1)) is None
    assert detector.check(state, _poll(same, 0.3)) is None  # durations do not count as change
    nudge = detector.check(state, _poll(same, 0.2))
    assert nudge is not None and "same call" in nudge
    with pytest.raises(Blocked) as raised:
        detector.check(state, _poll(same))
    assert raised.value.ask.question_kind == "stuck" and raised.value.ask.evidence


def test_polling_a_job_that_makes_progress_is_never_stuck() -> None:
    detector, state = StuckDetector(repeat_limit=3, idle_limit=4), ProjectState(goal="g")
    for second in range(40):
        loading = {"state": "loading", "gpu_memory_mib": 1000 + 500 * second}
        assert detector.check(state, _poll(loading)) is None


def test_nothing_changing_for_k_steps_is_stuck_even_when_calls_alternate() -> None:
    detector, state = StuckDetector(repeat_limit=3, idle_limit=4), ProjectState(goal="g")
    first, second = _poll({"a": 1}), _poll({"b": 2})
    results = [detector.check(state, observations) for observations in (first, second) * 3]
    assert results[:5] == [None] * 5
    assert results[5] is not None and "nothing changed" in results[5]


def test_progress_after_a_nudge_earns_a_fresh_nudge_later() -> None:
    detector, state = StuckDetector(repeat_limit=2, idle_limit=50), ProjectState(goal="g")
    detector.check(state, _poll({"x": 1}))
    assert detector.check(state, _poll({"x": 1})) is not None
    state.add_finding("something new happened")
    assert detector.check(state, _poll({"x": 2})) is None
    detector.check(state, _poll({"x": 3}))
    assert detector.check(state, _poll({"x": 3})) is not None  # a nudge again, not an escalation
