"""Context for long runs: old tool outputs are pruned, old turns folded into findings, the prompt stays
bounded however long the run goes, and every request stays a valid conversation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.llm_harness import ProviderName, agent_for, execute, make_policy, view

from agent.actions import Finish, Observation, ToolCall
from agent.policies.llm.context import compact, fold_digest, window_tokens
from agent.policies.llm.policy import LlmPolicy
from agent.policies.llm.settings import ContextSettings
from agent.policies.llm.state_view import render_state_document
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, ToolResultRecord, UserTurn
from agent.state import ProjectState
from agent.store import StateStore
from prompts import load_prompt
from twin.model_api.responders import reading_loop
from twin.model_api.script import RecordedRequest
from twin.model_api.server import ModelServer

SMALL = {
    "window_budget_tokens": 3_000,
    "state_document_max_tokens": 1_500,
    "keep_recent_turns": 4,
    "result_max_chars": 3_000,
    "pruned_result_keep_chars": 100,
}


def exchange(step: int, output_chars: int, error: bool = False) -> list[AssistantTurn | UserTurn]:
    call = ToolCallRecord(id=f"c{step}", name="tail_log", arguments={"lines": step})
    result = ToolResultRecord(
        call_id=call.id, name="tail_log", content=f"line {step} " + "x" * output_chars, is_error=error
    )
    return [
        AssistantTurn(step=step, text=f"Looking at the log, pass {step}.", calls=[call]),
        UserTurn(step=step, results=[result]),
    ]


def test_a_window_under_budget_is_left_alone() -> None:
    settings = ContextSettings(**SMALL)
    window = [turn for step in range(3) for turn in exchange(step, 100)]
    assert compact(window, settings).window == window


def test_old_outputs_are_pruned_before_any_turn_is_folded() -> None:
    settings = ContextSettings(**{**SMALL, "window_budget_tokens": 5_000})
    window = [turn for step in range(6) for turn in exchange(step, 3_000)]
    result = compact(window, settings)
    assert result.folded == [] and result.pruned_results > 0
    low_water = settings.window_budget_tokens * settings.low_water_fraction
    assert window_tokens(result.window, settings) <= low_water
    pruned = [item for turn in result.window if isinstance(turn, UserTurn) for item in turn.results if item.pruned]
    assert len(pruned) == result.pruned_results
    for item in pruned:  # a note saying what was cut, then the head of the output
        note, head = item.content.split("\n", 1)
        assert "output pruned" in note and "3007 characters" in note and "tail_log again" in note
        assert head.startswith("line ") and len(head) == settings.pruned_result_keep_chars
    assert [turn.step for turn in result.window] == [turn.step for turn in window]  # nothing folded
    latest = result.window[-1]
    assert isinstance(latest, UserTurn) and not latest.results[0].pruned  # the newest output is kept whole


def test_oldest_turns_are_folded_when_pruning_is_not_enough() -> None:
    settings = ContextSettings(**SMALL)
    window = [turn for step in range(60) for turn in exchange(step, 400, error=step % 7 == 0)]
    result = compact(window, settings)
    assert result.folded and window_tokens(result.window, settings) <= settings.window_budget_tokens
    assert isinstance(result.window[0], AssistantTurn)  # no result is separated from its call
    assert [turn.step for turn in result.folded + result.window] == [turn.step for turn in window]
    assert len(result.window) >= settings.keep_recent_turns
    summary, evidence = fold_digest(result.folded)
    first, last = result.folded[0].step, result.folded[-1].step
    assert f"steps {first}-{last}" in summary and "errors" in summary
    assert any("ERROR" in line for line in evidence) and len(evidence) <= 31


def test_the_state_document_in_the_prompt_is_bounded() -> None:
    state = ProjectState(goal="g")
    for index in range(500):
        state.add_finding(f"finding {index} " + "y" * 300, [f"evidence {index}-{line}" for line in range(20)])
    text = render_state_document(state, Path("state"), 8_000)
    assert len(text) <= 8_000 + 200
    assert "finding 499" in text and "finding 10 " not in text
    assert "older findings are in the state document and its journal on disk" in text
    # The model sees the live run, not a hand-over note saying the run stopped unexpectedly.
    assert "is running it now" in text and "stopped unexpectedly" not in text


def test_pinned_findings_and_digests_stay_visible_however_long_the_run() -> None:
    state = ProjectState(goal="g")
    state.add_finding("GPU 3 is faulty; use 0-2,4-7", ["nvidia-smi: GPU 3 Xid 79"], pinned=True)
    for index in range(3_000):
        state.add_finding(f"finding {index}", [f"evidence {index}"])
    state.loop.policy_state["llm_digests"] = [
        {"summary": f"digest {index}", "evidence": ["line"]} for index in range(30)
    ]
    text = render_state_document(state, Path("state"), 12_000)
    assert "GPU 3 is faulty" in text and "finding 2999" in text and "finding 2000" not in text
    assert "digest 29" in text and "## Digests of folded conversation turns" in text
    assert "digest" not in text.split("## Recent findings")[1].split("## ")[0]


def assert_bounded_and_valid(requests: list[RecordedRequest], steps: int) -> None:
    assert all(request.answer == "turn" for request in requests)
    sizes = [request.raw_size for request in requests]
    tools_chars = len(json.dumps(requests[-1].body.get("tools")))
    context_chars = (SMALL["window_budget_tokens"] + SMALL["state_document_max_tokens"]) * 3.5
    assert max(sizes) <= len(load_prompt("system")) + tools_chars + 2 * context_chars  # 2x: JSON framing
    # No growth: the last third of the run is no bigger than the middle third.
    assert max(sizes[-steps // 3 :]) <= 1.15 * max(sizes[steps // 3 : 2 * steps // 3])
    for request in requests[1:]:  # each request answers every call of the turn before it, by id
        answered = {result.call_id for result in request.tool_results()}
        last_calls = request.tool_call_ids()[-2:]
        assert last_calls and set(last_calls) <= answered


def drive(policy: LlmPolicy, state: ProjectState, state_dir: Path, limit: int) -> Finish:
    """The loop's job without its store: decide, run the calls through a real registry, repeat."""
    observations: list[Observation] = []
    for _ in range(limit):
        decision = policy.decide(view(state, state_dir, observations=observations))
        finish = [action for action in decision.actions if isinstance(action, Finish)]
        if finish:
            return finish[0]
        observations = execute(
            [action for action in decision.actions if isinstance(action, ToolCall)], state, state_dir
        )
        state.step += 1
    raise AssertionError("the scripted run did not finish")


def test_a_long_run_through_the_loop_folds_into_findings_with_a_bounded_prompt(tmp_path: Path) -> None:
    steps = 40
    store = StateStore(tmp_path / "state")
    state = ProjectState(goal="keep reading logs")
    state.limits.max_steps = steps + 10
    store.save(state)
    with ModelServer(responder=reading_loop(steps)) as server:
        policy = make_policy(server, "anthropic", False, context=SMALL)
        event = agent_for(policy, store, state).run()
        policy.close()
    assert event == "done" and state.step == steps + 1 and server.rejections == []
    assert_bounded_and_valid(server.requests, steps)
    saved = store.load()
    # Digests live in their own list, not among the findings (which stay the model's and the tools' own).
    folded = saved.loop.policy_state["llm_digests"]
    assert folded and all(
        "folded out of the model's context" in item["summary"] and item["evidence"] for item in folded
    )
    assert not [finding for finding in saved.findings if "folded out" in finding.summary]
    assert [finding.summary for finding in saved.findings if finding.summary.startswith("checkpoint")] == [
        f"checkpoint {step}" for step in range(0, steps, 10)
    ]
    records = [json.loads(line) for line in (store.state_dir / "transcript.jsonl").read_text().splitlines()]
    assert sum(record["kind"] == "turn" for record in records) >= 2 * steps
    assert sum(record["kind"] == "fold" for record in records) >= len(folded)


HEAVY = [
    pytest.mark.heavy,
    pytest.mark.skipif(os.environ.get("OPSLOOP_HEAVY") != "1", reason="3,000 steps; OPSLOOP_HEAVY=1 runs it"),
]


@pytest.mark.parametrize(
    ("provider", "stream", "steps"),
    [
        ("anthropic", False, 300),
        ("openai", True, 60),
        pytest.param("anthropic", True, 3_000, marks=HEAVY),
        pytest.param("openai", False, 3_000, marks=HEAVY),
    ],
)
def test_prompt_size_stays_bounded_however_long_the_run(
    provider: ProviderName, stream: bool, steps: int, tmp_path: Path
) -> None:
    state = ProjectState(goal="keep reading logs")
    with ModelServer(responder=reading_loop(steps)) as server:
        policy = make_policy(server, provider, stream, context=SMALL)
        finish = drive(policy, state, tmp_path, steps + 5)
        policy.close()
    assert finish.summary == f"finished after {steps} steps" and server.rejections == []
    assert_bounded_and_valid(server.requests, steps)
