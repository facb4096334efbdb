"""The loop with real tools on the local host, driven by the scripted policy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agent.actions import Decision, Finish, ToolCall
from agent.escalation import answer_question
from agent.loop import Agent, ExitEvent
from agent.policies.base import PolicyView
from agent.policies.scripted import ScriptedPolicy
from agent.state import ProjectState, Question
from agent.store import StateStore
from agent.stuck import StuckDetector
from tools.base import NeedsApproval, Tool, ToolArgs, ToolContext, ToolOutput, ToolRegistry, ToolSettings
from tools.catalog import default_tools
from tools.hosts.local import LocalHost


class GuardedArgs(ToolArgs):
    target: str


class GuardedTool(Tool[GuardedArgs, ToolOutput]):
    """Stands in for a destructive tool: it always wants a human's approval."""

    name = "guarded"
    description = "needs approval"
    args_model = GuardedArgs
    output_model = ToolOutput

    def run(self, args: GuardedArgs, context: ToolContext) -> ToolOutput:
        raise NeedsApproval(f"would wipe {args.target}", evidence=[args.target])


class Recording:
    """Wraps a policy and keeps every view it was given."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.views: list[PolicyView] = []

    def decide(self, view: PolicyView) -> Decision:
        self.views.append(view)
        decision: Decision = self.inner.decide(view)
        return decision


class Exploding:
    name = "exploding"

    def decide(self, view: PolicyView) -> Decision:
        raise RuntimeError("policy bug")


def _agent(
    tmp_path: Path,
    policy: Any,
    state: ProjectState | None = None,
    events: list[tuple[ExitEvent, Question | None]] | None = None,
) -> Agent:
    store = StateStore(tmp_path / "state")
    state = state or ProjectState(goal="test the loop")
    context = ToolContext(
        state=state,
        state_dir=store.state_dir,
        host=LocalHost(exit_dir=tmp_path / "exits"),
        settings=ToolSettings(engine_python=sys.executable),
        checkpoint=lambda: store.save(state),
    )
    registry = ToolRegistry([*default_tools(), GuardedTool()])
    sink = events if events is not None else []
    return Agent(
        policy,
        registry,
        context,
        store,
        on_exit=lambda event, question: sink.append((event, question)),
        stuck=StuckDetector(repeat_limit=3, idle_limit=10),
    )


def test_tool_failures_become_results_and_the_journal_brackets_every_call(tmp_path: Path) -> None:
    policy = Recording(
        ScriptedPolicy.from_decisions(
            [
                {
                    "actions": [
                        {"tool": "update_state", "arguments": {"tasks": [{"id": "t1", "title": "plan"}]}},
                        {"tool": "no_such_tool"},
                        {"tool": "update_state", "arguments": {"bogus": 1}},
                        {"tool": "update_state", "arguments": "{not json"},
                    ]
                },
                {"finish": "done"},
            ]
        )
    )
    agent = _agent(tmp_path, policy)
    assert agent.run() == "done"

    second = policy.views[1].observations
    assert [item.result.ok for item in second] == [True, False, False, False]
    assert "unknown tool" in (second[1].result.error or "") and "bogus" in (second[2].result.error or "")
    assert "not valid JSON" in (second[3].result.error or "")
    kinds = [(entry["kind"], entry.get("call_id")) for entry in agent.store.journal.records()]
    for call_id in ("d0-0", "d0-1", "d0-2", "d0-3"):
        assert kinds.index(("intent", call_id)) < kinds.index(("result", call_id))
    saved = agent.store.load()
    assert (saved.status, saved.summary, saved.step, saved.loop.pending) == ("done", "done", 2, None)


def test_a_call_needing_approval_blocks_and_later_calls_do_not_run(tmp_path: Path) -> None:
    events: list[tuple[ExitEvent, Question | None]] = []
    policy = ScriptedPolicy.from_decisions(
        [
            {
                "actions": [
                    {"tool": "guarded", "arguments": {"target": "/data"}},
                    {"tool": "update_state", "arguments": {"findings": [{"summary": "after"}]}},
                ]
            }
        ]
    )
    agent = _agent(tmp_path, policy, events=events)
    assert agent.run() == "blocked"

    saved = agent.store.load()
    question = saved.pending_questions()[0]
    assert question.kind == "approval" and "would wipe /data" in question.question
    assert events == [("blocked", question)]
    observed = saved.loop.observations
    assert "needs approval" in (observed[0].result.error or "") and "not run" in (observed[1].result.error or "")
    assert saved.findings == []


def test_answers_reach_the_policy_once(tmp_path: Path) -> None:
    script = ScriptedPolicy.from_decisions([{"ask": "Which port?"}, {"finish": "ok"}])
    first = _agent(tmp_path, Recording(script))
    assert first.run() == "blocked"
    state = first.store.load()
    answer_question(state, "30000")

    policy = Recording(script)
    second = _agent(tmp_path, policy, state=state)
    assert second.run() == "done"
    assert [question.answer for question in policy.views[0].new_answers] == ["30000"]
    assert second.store.load().questions[0].seen_by_policy


def test_an_exhausted_budget_blocks_and_extending_it_continues(tmp_path: Path) -> None:
    decisions = [
        {"tool": "update_state", "arguments": {"findings": [{"summary": f"f{number}"}]}} for number in range(3)
    ]
    state = ProjectState(goal="g")
    state.limits.max_steps = 2
    events: list[tuple[ExitEvent, Question | None]] = []
    first = _agent(tmp_path, ScriptedPolicy.from_decisions([*decisions, {"finish": "ok"}]), state, events)
    assert first.run() == "limit"
    assert events[0][1] is not None and events[0][1].kind == "limit"
    state = first.store.load()
    answer_question(state, "extend")
    second = _agent(tmp_path, ScriptedPolicy.from_decisions([*decisions, {"finish": "ok"}]), state)
    assert second.run() == "done"
    assert [finding.summary for finding in second.state.findings if finding.summary.startswith("f")] == [
        "f0",
        "f1",
        "f2",
    ]


def test_repeating_a_failing_call_is_stuck_nudged_then_escalated(tmp_path: Path) -> None:
    policy = Recording(ScriptedPolicy.from_decisions([{"tool": "no_such_tool"}] * 10))
    agent = _agent(tmp_path, policy)
    assert agent.run() == "blocked"
    nudges = [view.nudge for view in policy.views if view.nudge]
    assert len(nudges) == 1
    assert agent.store.load().pending_questions()[0].kind == "stuck"


def test_an_unexpected_error_is_recorded_saved_and_raised(tmp_path: Path) -> None:
    events: list[tuple[ExitEvent, Question | None]] = []
    agent = _agent(tmp_path, Exploding(), events=events)
    with pytest.raises(RuntimeError, match="policy bug"):
        agent.run()
    saved = agent.store.load()
    assert saved.status == "failed" and "policy bug" in saved.findings[-1].summary
    assert events == [("failed", None)]


class DuplicateIds:
    """A policy that (wrongly) gives two calls the same id; both must still run."""

    name = "duplicates"

    def __init__(self) -> None:
        self.decisions = 0

    def decide(self, view: PolicyView) -> Decision:
        self.decisions += 1
        if self.decisions > 1:
            return Decision(actions=[Finish(summary="ok")])
        calls = [
            ToolCall(id="same", tool="update_state", arguments={"findings": [{"summary": text}]})
            for text in ("one", "two")
        ]
        return Decision(actions=list(calls))


def test_calls_sharing_an_id_both_run(tmp_path: Path) -> None:
    agent = _agent(tmp_path, DuplicateIds())
    assert agent.run() == "done"
    assert [finding.summary for finding in agent.state.findings] == ["one", "two"]
