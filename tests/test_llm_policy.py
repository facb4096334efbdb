"""The LLM policy's decisions: tool calls, results matched by id, ask_human / finish, the prompt it sends."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.llm_harness import MODE_IDS, MODES, ProviderName, execute, make_policy, view

from agent.actions import Ask, Finish, Observation, ToolCall
from agent.policies.llm.pricing import ModelPrice, TokenCounts, cost_usd
from agent.state import ProjectState, Question
from prompts import load_prompt
from twin.model_api.script import ModelTurn, ToolUse
from twin.model_api.server import ModelServer

ASK = {
    "question": "May I reboot the host?",
    "context": "GPU 3 fell off the bus.",
    "evidence": ["NVRM: Xid 79, GPU has fallen off the bus"],
    "options": ["reboot", "stop"],
    "hypothesis": "A PCIe link fault on GPU 3.",
    "kind": "hardware",
}


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_every_tool_call_gets_exactly_one_result_matched_by_id(
    provider: ProviderName, stream: bool, tmp_path: Path
) -> None:
    script = [
        ModelTurn(
            text="Three checks.",
            tool_calls=[
                ToolUse("emit", {"text": "ok"}),
                ToolUse("emit", '{"text": '),  # malformed JSON
                ToolUse("read_minds", {"who": "GPU"}),
            ],
        ),  # no such tool
        ModelTurn(text="Done checking.", tool_calls=[ToolUse("finish", {"summary": "all good"})]),
    ]
    state = ProjectState(goal="check the engine")
    with ModelServer(script) as server:
        policy = make_policy(server, provider, stream)
        first = policy.decide(view(state, tmp_path))
        calls = [action for action in first.actions if isinstance(action, ToolCall)]
        assert [call.arguments for call in calls] == [{"text": "ok"}, '{"text": ', {"who": "GPU"}]
        observations = execute(calls, state, tmp_path)
        second = policy.decide(view(state, tmp_path, observations=observations))
        policy.close()
        request = server.requests[1]
    assert server.rejections == []
    assert request.tool_call_ids() == [call.id for call in calls]
    results = {result.call_id: result for result in request.tool_results()}
    assert list(results) == [call.id for call in calls]
    good, malformed, unknown = (results[call.id] for call in calls)
    assert not good.is_error and '"ok"' in good.content
    assert malformed.is_error and "not valid JSON" in malformed.content
    assert unknown.is_error and "unknown tool 'read_minds'" in unknown.content and "emit" in unknown.content
    assert second.actions == [Finish(summary="all good")]


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_ask_human_stops_with_the_question_and_the_answer_comes_back_as_its_result(
    provider: ProviderName, stream: bool, tmp_path: Path
) -> None:
    script = [
        ModelTurn(tool_calls=[ToolUse("ask_human", ASK)]),
        ModelTurn(tool_calls=[ToolUse("emit", {"text": "rebooting"})]),
    ]
    state = ProjectState(goal="bring up SGLang")
    with ModelServer(script) as server:
        policy = make_policy(server, provider, stream)
        [ask] = policy.decide(view(state, tmp_path)).actions
        answer = Question(id="q1", question=ASK["question"], answer="yes, reboot it")
        policy.decide(view(state, tmp_path, answers=[answer]))
        policy.close()
        request = server.requests[1]
    assert ask == Ask(
        question=ASK["question"],
        context=ASK["context"],
        evidence=ASK["evidence"],
        options=ASK["options"],
        hypothesis=ASK["hypothesis"],
        question_kind="hardware",
    )
    [result] = request.tool_results()
    assert result.call_id == request.tool_call_ids()[0] and "yes, reboot it" in result.content
    assert server.rejections == []


def test_ask_human_and_finish_must_come_alone(tmp_path: Path) -> None:
    script = [
        ModelTurn(tool_calls=[ToolUse("emit", {"text": "a"}), ToolUse("finish", {"summary": "early"})]),
        ModelTurn(tool_calls=[ToolUse("finish", {"summary": "now"})]),
    ]
    state = ProjectState(goal="g")
    with ModelServer(script) as server:
        policy = make_policy(server, "anthropic", False)
        first = policy.decide(view(state, tmp_path))
        assert [type(action) for action in first.actions] == [ToolCall]
        observations = execute([action for action in first.actions if isinstance(action, ToolCall)], state, tmp_path)
        second = policy.decide(view(state, tmp_path, observations=observations))
        policy.close()
    results = server.requests[1].tool_results()
    assert [result.is_error for result in results] == [False, True]
    assert "call ask_human or finish alone" in results[1].content
    assert second.actions == [Finish(summary="now")]


def test_invalid_policy_tool_arguments_go_back_as_an_error(tmp_path: Path) -> None:
    script = [
        ModelTurn(tool_calls=[ToolUse("ask_human", {"question": "Help?"})]),
        ModelTurn(tool_calls=[ToolUse("ask_human", ASK)]),
    ]
    state = ProjectState(goal="g")
    with ModelServer(script) as server:
        policy = make_policy(server, "openai", True)
        assert policy.decide(view(state, tmp_path)).actions == []
        [ask] = policy.decide(view(state, tmp_path)).actions
        policy.close()
    [result] = server.requests[1].tool_results()
    assert result.is_error and "evidence" in result.content and "hypothesis" in result.content
    assert isinstance(ask, Ask)


def test_a_reply_without_a_tool_call_is_answered_with_a_reminder(tmp_path: Path) -> None:
    script = [
        ModelTurn(text="I think we are done here."),
        ModelTurn(tool_calls=[ToolUse("finish", {"summary": "done"})]),
    ]
    with ModelServer(script) as server:
        policy = make_policy(server, "anthropic", True)
        assert policy.decide(view(ProjectState(goal="g"), tmp_path)).actions == []
        policy.decide(view(ProjectState(goal="g"), tmp_path))
        policy.close()
    assert "called no tool" in server.requests[1].last_user_text()


def test_the_prompt_is_system_prompt_tools_window_and_the_state_document(tmp_path: Path) -> None:
    state = ProjectState(goal="serve Kimi-K2.5 on 8 GPUs")
    state.add_finding("vLLM EAGLE-3 acceptance is 15%", ["acceptance_rate=0.15"])
    state.next_steps = ["check the SGLang debug log"]
    with ModelServer([ModelTurn(tool_calls=[ToolUse("emit")])]) as server:
        policy = make_policy(server, "anthropic", False)
        policy.decide(view(state, tmp_path, nudge="You repeated the same call three times."))
        policy.close()
        body = server.requests[0].body
        closing = server.requests[0].last_user_text()
    assert body["system"][0]["text"] == load_prompt("system")
    assert "stop and ask" in body["system"][0]["text"].lower()
    assert [tool["name"] for tool in body["tools"]] == ["emit", "update_state", "ask_human", "finish"]
    assert "<state_document>" in closing and "serve Kimi-K2.5 on 8 GPUs" in closing
    assert "vLLM EAGLE-3 acceptance is 15%" in closing and "check the SGLang debug log" in closing
    assert "You repeated the same call three times." in closing


def test_tokens_and_cost_are_accounted_per_call(tmp_path: Path) -> None:
    script = [
        ModelTurn(tool_calls=[ToolUse("emit")], output_tokens=120),
        ModelTurn(tool_calls=[ToolUse("emit")], output_tokens=80),
    ]
    price = {"input": 2.0, "output": 10.0, "cache_read": 0.2}
    state = ProjectState(goal="g")
    with ModelServer(script) as server:
        policy = make_policy(server, "openai", True, model="gpt-6-sol", prices={"gpt-6-sol": price})
        first = policy.decide(view(state, tmp_path))
        observations = execute([action for action in first.actions if isinstance(action, ToolCall)], state, tmp_path)
        second = policy.decide(view(state, tmp_path, observations=observations))
        policy.close()
    assert server.requests[0].body["model"] == "gpt-6-sol"
    for usage, output in ((first.usage, 120), (second.usage, 80)):
        assert usage.model_calls == 1 and usage.input_tokens > 0 and usage.output_tokens == output
        tokens = TokenCounts(
            input_tokens=usage.input_tokens, output_tokens=output, cache_read_tokens=usage.cached_input_tokens
        )
        assert usage.cost_usd == pytest.approx(cost_usd(tokens, ModelPrice(**price)))
    # The system prompt and tools are a shared prefix, so the second call reads them from the cache.
    assert first.usage.cached_input_tokens == 0 and second.usage.cached_input_tokens >= 1024


def test_anthropic_cache_writes_and_reads_are_priced_apart(tmp_path: Path) -> None:
    script = [
        ModelTurn(tool_calls=[ToolUse("emit")], output_tokens=0),
        ModelTurn(tool_calls=[ToolUse("emit")], output_tokens=0),
    ]
    price = {"input": 1.0, "output": 1.0, "cache_write": 10.0, "cache_read": 0.0}
    state = ProjectState(goal="g")
    with ModelServer(script) as server:
        policy = make_policy(server, "anthropic", False, model="claude-opus-5-5", prices={"claude-opus-5-5": price})
        first = policy.decide(view(state, tmp_path))
        observations = execute([action for action in first.actions if isinstance(action, ToolCall)], state, tmp_path)
        second = policy.decide(view(state, tmp_path, observations=observations))
        policy.close()
    # The first call writes the prefix to the cache (dearer than plain input), the second reads it (free).
    assert first.usage.cost_usd > first.usage.input_tokens * 1.0 / 1_000_000
    assert second.usage.cached_input_tokens > 0
    assert second.usage.cost_usd < (second.usage.input_tokens - second.usage.cached_input_tokens) * 10 / 1_000_000


def test_empty_and_repeated_call_ids_are_replaced_by_unique_ones(tmp_path: Path) -> None:
    """Some OpenAI-compatible servers send no ids, or the same ids on every turn."""
    script = [
        ModelTurn(tool_calls=[ToolUse("emit", {"text": "a"}, id=""), ToolUse("emit", {"text": "b"}, id="")]),
        ModelTurn(
            tool_calls=[ToolUse("emit", {"text": "c"}, id="call_1"), ToolUse("emit", {"text": "d"}, id="call_1")]
        ),
        ModelTurn(tool_calls=[ToolUse("emit", {"text": "e"}, id="call_1")]),
        ModelTurn(tool_calls=[ToolUse("finish", {"summary": "s"})]),
    ]
    state = ProjectState(goal="g")
    seen: list[str] = []
    with ModelServer(script) as server:
        policy = make_policy(server, "openai", False)
        observations: list[Observation] = []
        for _ in range(4):
            decision = policy.decide(view(state, tmp_path, observations=observations))
            calls = [action for action in decision.actions if isinstance(action, ToolCall)]
            seen += [call.id for call in calls]
            observations = execute(calls, state, tmp_path)
        policy.close()
    assert len(seen) == 5 and len(set(seen)) == 5 and all(seen)
    assert seen[2] == "call_1"  # a fresh id is kept as the server sent it
    assert server.rejections == []


@pytest.mark.parametrize(
    ("provider", "stop_reason", "category"),
    [
        ("anthropic", "refusal", "cyber"),
        ("openai", "refusal", "refusal"),
        ("chat", "content_filter", "content_filter"),
        ("chat", "refusal", ""),
    ],
)
def test_a_refusal_stops_the_run_with_a_question_naming_its_category(
    provider: ProviderName, stop_reason: str, category: str, tmp_path: Path
) -> None:
    turn = ModelTurn(text="I can't help with that.", stop_reason=stop_reason, refusal_category=category or None)
    with ModelServer([turn]) as server:
        policy = make_policy(server, provider, True)
        decision = policy.decide(view(ProjectState(goal="g"), tmp_path))
        policy.close()
    [ask] = decision.actions
    assert isinstance(ask, Ask) and ask.question_kind == "model_refusal"
    assert f"category: {category}" in ask.question if category else "category" not in ask.question
    assert ask.evidence[0] == "model said: I can't help with that."
    assert decision.usage.model_calls == 1
