"""Transient API failures are retried (honouring retry-after), bounded in attempts and time; then the
policy asks a human instead of crashing. All through the real SDKs against the loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.llm_harness import (
    MODE_IDS,
    MODES,
    TEST_KEYS,
    ProviderName,
    SleepRecorder,
    execute,
    llm_section,
    make_policy,
    view,
)

from agent.actions import Ask, Observation, ToolCall
from agent.policies.llm.build import build_llm_policy
from agent.policies.llm.settings import LlmSettings
from agent.state import ProjectState
from twin.model_api.responders import reading_loop, with_random_faults
from twin.model_api.script import Fault, ModelTurn, ToolUse
from twin.model_api.server import ModelServer

GOOD = ModelTurn(text="Checking the engine.", tool_calls=[ToolUse("emit", {"text": "status"})])


def decide_through(
    faults: list[Fault], provider: ProviderName, stream: bool, tmp_path: Path, **overrides: object
) -> tuple[list[object], SleepRecorder, ModelServer]:
    sleep = SleepRecorder()
    with ModelServer([*faults, GOOD]) as server:
        policy = make_policy(server, provider, stream, sleep=sleep, **overrides)
        decision = policy.decide(view(ProjectState(goal="serve a model"), tmp_path))
        policy.close()
    return list(decision.actions), sleep, server


# A hung request is cut by the client's timeout; the good answer that follows must come within it, which on a
# loaded machine can take a good part of a second, so the timeout is generous and a hang is far longer (the server
# ends a hang as soon as it stops).
REQUEST_TIMEOUT_SECONDS = 3.0
HANG_SECONDS = 60.0
FAULTS = {
    "429-retry-after": Fault.rate_limited(retry_after=0.02),
    "429-bare": Fault.rate_limited(),
    "500": Fault.http(500),
    "503": Fault.http(503),
    "529-overloaded": Fault.overloaded(),
    "timeout": Fault.hang(HANG_SECONDS),
    "cut-stream": Fault.cut_stream(after_events=3),
    "cut-stream-clean-end": Fault.cut_stream(after_events=3, clean=True),
    "stream-stall": Fault.stall_stream(HANG_SECONDS, after_events=2),
    "stream-error-event": Fault.stream_error(after_events=2),
}


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_a_transient_failure_is_retried_and_the_step_goes_on(
    fault_name: str, provider: ProviderName, stream: bool, tmp_path: Path
) -> None:
    actions, sleep, server = decide_through(
        [FAULTS[fault_name]], provider, stream, tmp_path, request_timeout_seconds=REQUEST_TIMEOUT_SECONDS
    )
    assert [request.answer for request in server.requests] == [f"fault:{FAULTS[fault_name].kind}", "turn"]
    assert len(sleep.waits) == 1
    assert len(actions) == 1 and isinstance(actions[0], ToolCall) and actions[0].tool == "emit"
    # Both attempts carried the same conversation: a retry never changes what is asked.
    assert server.requests[0].messages == server.requests[1].messages


@pytest.mark.parametrize(("provider", "stream"), [("anthropic", False), ("openai", True)])
def test_retry_after_is_honoured_and_retry_after_ms_wins(provider: ProviderName, stream: bool, tmp_path: Path) -> None:
    faults = [Fault.rate_limited(retry_after=0.03), Fault.http(429, retry_after=7, retry_after_ms=15)]
    _, sleep, _ = decide_through(faults, provider, stream, tmp_path)
    assert sleep.waits == [pytest.approx(0.03), pytest.approx(0.015)]


def test_backoff_grows_exponentially_with_jitter_within_its_bounds(tmp_path: Path) -> None:
    retry = {"max_attempts": 6, "initial_backoff_seconds": 0.004, "max_backoff_seconds": 0.01}
    _, sleep, _ = decide_through([Fault.http(500)] * 5, "anthropic", False, tmp_path, retry=retry)
    ceilings = [min(0.01, 0.004 * 2**attempt) for attempt in range(5)]
    assert len(sleep.waits) == 5
    for wait, ceiling in zip(sleep.waits, ceilings, strict=True):
        assert ceiling / 2 <= wait <= ceiling


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_exhausted_retries_become_a_question_not_a_crash(provider: ProviderName, stream: bool, tmp_path: Path) -> None:
    sleep = SleepRecorder()
    with ModelServer([Fault.overloaded()] * 3) as server:
        policy = make_policy(server, provider, stream, sleep=sleep, retry={"max_attempts": 3})
        decision = policy.decide(view(ProjectState(goal="serve a model"), tmp_path))
        policy.close()
    assert len(server.requests) == 3 and len(sleep.waits) == 2
    [ask] = decision.actions
    assert isinstance(ask, Ask) and ask.question_kind == "model_unavailable"
    assert "did not answer" in ask.question and "retry" in ask.question
    assert len(ask.evidence) == 3 and all("HTTP 529" in line for line in ask.evidence)
    assert ask.hypothesis and ask.options
    assert decision.usage.model_calls == 0


def test_retrying_stops_when_the_next_wait_would_pass_the_total_time_bound(tmp_path: Path) -> None:
    sleep = SleepRecorder()
    with ModelServer([Fault.rate_limited(retry_after=30), GOOD]) as server:
        policy = make_policy(server, "openai", False, sleep=sleep, retry={"max_total_seconds": 2.0})
        decision = policy.decide(view(ProjectState(goal="g"), tmp_path))
        policy.close()
    assert len(server.requests) == 1 and sleep.waits == []
    [ask] = decision.actions
    assert isinstance(ask, Ask) and "429" in ask.question and "quota" in ask.hypothesis


@pytest.mark.parametrize(("status", "hint"), [(401, "API key"), (404, "model name"), (400, "rejected")])
def test_a_refused_request_is_not_retried(status: int, hint: str, tmp_path: Path) -> None:
    sleep = SleepRecorder()
    with ModelServer([Fault.http(status, message="no"), GOOD]) as server:
        policy = make_policy(server, "anthropic", True, sleep=sleep)
        decision = policy.decide(view(ProjectState(goal="g"), tmp_path))
        policy.close()
    assert len(server.requests) == 1 and sleep.waits == []
    [ask] = decision.actions
    assert isinstance(ask, Ask) and "refused" in ask.question and hint in ask.hypothesis


def test_the_operator_sees_each_retry(tmp_path: Path) -> None:
    seen: list[tuple[int, float, str]] = []
    with ModelServer([Fault.overloaded(), GOOD]) as server:
        settings = LlmSettings.model_validate(llm_section(server, "anthropic", False))
        policy = build_llm_policy(
            settings,
            environ=TEST_KEYS,
            on_retry=lambda attempt, wait, reason: seen.append((attempt, wait, reason)),
            sleep=SleepRecorder(),
        )
        policy.decide(view(ProjectState(goal="g"), tmp_path))
        policy.close()
    assert len(seen) == 1 and seen[0][0] == 1 and "529" in seen[0][2]


def test_a_soak_with_thirty_percent_faults_never_crashes_and_loses_no_turn(tmp_path: Path) -> None:
    steps = 40
    state = ProjectState(goal="read logs through a flaky API")
    with ModelServer(responder=with_random_faults(reading_loop(steps, output_chars=200), 0.3, seed=7)) as server:
        policy = make_policy(server, "anthropic", True, sleep=SleepRecorder(), retry={"max_attempts": 3})
        observations: list[Observation] = []
        asked = 0
        for _ in range(steps * 2):
            decision = policy.decide(view(state, tmp_path, observations=observations))
            if any(isinstance(action, Ask) for action in decision.actions):
                asked += 1  # retries ran out: the run would stop here and resume later
                observations = []
                continue
            calls = [action for action in decision.actions if isinstance(action, ToolCall)]
            if not calls:
                break
            observations = execute(calls, state, tmp_path)
            state.step += 1
        policy.close()
    faults = [request for request in server.requests if request.answer.startswith("fault:")]
    assert 0.15 * len(server.requests) <= len(faults) <= 0.45 * len(server.requests)
    assert state.step == steps and server.rejections == []
    assert len(server.answered()) == steps + 1  # every scripted turn was delivered exactly once
    assert asked <= 3
