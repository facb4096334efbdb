"""Settling a step cut short by a crash: finished calls stand, the running one is reported, none repeats.

The journal and state here are written exactly as the loop writes them before a crash; the
end-to-end SIGKILL test in test_crash_resume.py kills a real agent process.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agent.actions import Decision, Finish, Observation, ToolCall
from agent.loop import Agent
from agent.policies.base import PolicyView
from agent.recovery import recover_pending_step
from agent.state import PendingStep, ProjectState
from agent.store import StateStore
from tools.base import ToolContext, ToolResult, ToolSettings
from tools.catalog import default_registry
from tools.hosts.local import LocalHost


def _call(call_id: str, summary: str) -> dict[str, Any]:
    return ToolCall(id=call_id, tool="update_state", arguments={"findings": [{"summary": summary}]})


def _crashed_mid_step(tmp_path: Path, started: list[str]) -> tuple[StateStore, ProjectState]:
    """A state whose pending step has call a finished, and the journal intents listed in ``started``."""
    store = StateStore(tmp_path)
    state = ProjectState(goal="g", step=4)
    state.add_finding("a")  # the effect of call a, saved with its result
    finished = Observation(call_id="a", tool="update_state", result=ToolResult(tool="update_state", ok=True))
    actions = [_call("a", "a"), _call("b", "b"), _call("c", "c"), Finish(summary="all done")]
    state.loop.pending = PendingStep(step=4, thought="three calls", actions=actions, results={"a": finished})
    store.save(state)
    store.journal.record(
        "decision", step=4, thought="three calls", actions=[action.model_dump(mode="json") for action in actions]
    )
    for call_id in started:
        store.journal.record("intent", step=4, call_id=call_id, tool="update_state")
    return store, state


def test_the_call_in_flight_is_interrupted_and_the_rest_of_the_decision_is_dropped(tmp_path: Path) -> None:
    store, state = _crashed_mid_step(tmp_path, started=["a", "b"])  # a's result record was lost too
    notes = recover_pending_step(state, store.journal)

    assert state.loop.pending is not None
    results = state.loop.pending.results
    assert results["b"].interrupted and "verify" in (results["b"].result.error or "").lower()
    assert not results["c"].interrupted and (results["c"].result.error or "").startswith("not run")
    assert [action.kind for action in state.loop.pending.actions] == ["tool_call"] * 3  # finish dropped
    assert len(notes) == 2
    journaled = {entry["call_id"]: entry for entry in store.journal.records() if entry["kind"] == "result"}
    assert set(journaled) == {"a", "b", "c"} and journaled["a"]["recovered"]
    assert store.journal.unfinished_intents() == []


class Watching:
    name = "watching"

    def __init__(self) -> None:
        self.seen: list[Observation] = []

    def decide(self, view: PolicyView) -> Decision:
        self.seen = view.observations
        return Decision(actions=[Finish(summary="checked")])


def _resume(store: StateStore, state: ProjectState, policy: Watching, tmp_path: Path) -> str:
    context = ToolContext(
        state=state,
        state_dir=store.state_dir,
        host=LocalHost(exit_dir=tmp_path / "exits"),
        settings=ToolSettings(engine_python=sys.executable),
    )
    return Agent(policy, default_registry(), context, store).run()


def test_resuming_shows_the_policy_every_result_and_runs_nothing_twice(tmp_path: Path) -> None:
    store, _ = _crashed_mid_step(tmp_path, started=["a", "b"])
    state = store.load()
    policy = Watching()
    assert _resume(store, state, policy, tmp_path) == "done"
    seen = [(item.call_id, item.interrupted) for item in policy.seen]
    assert seen == [("a", False), ("b", True), ("c", False)]
    assert [finding.summary for finding in state.findings] == ["a"]  # b and c were not run again
    intents = [entry["call_id"] for entry in store.journal.records() if entry["kind"] == "intent"]
    assert intents == ["a", "b"]


def test_calls_that_never_started_run_as_planned(tmp_path: Path) -> None:
    store, _ = _crashed_mid_step(tmp_path, started=["a"])  # died after saving a's result
    state = store.load()
    policy = Watching()
    assert _resume(store, state, policy, tmp_path) == "done"
    assert [finding.summary for finding in state.findings] == ["a", "b", "c"]
    assert state.summary == "all done", "the decision's own finish still applies"
    assert policy.seen == []
