"""The rules today's hosted models enforce, against the real SDKs: the loopback server refuses what the real
service refuses, and the policy sends what it accepts (thinking and reasoning sent back unchanged, call
ids every API takes, broken arguments wrapped, the right API for the model)."""

from __future__ import annotations

import itertools
from pathlib import Path

import anthropic
import openai
import pytest
from support.llm_harness import ProviderName, execute, make_policy, view

from agent.actions import Decision, Observation, ToolCall
from agent.policies.llm.policy import LlmPolicy
from agent.state import ProjectState
from twin.model_api.script import ModelTurn, ToolUse
from twin.model_api.server import ModelServer


def drive(policy: LlmPolicy, state: ProjectState, state_dir: Path, turns: int) -> list[Decision]:
    decisions: list[Decision] = []
    observations: list[Observation] = []
    for _ in range(turns):
        decision = policy.decide(view(state, state_dir, observations=observations))
        decisions.append(decision)
        observations = execute(
            [action for action in decision.actions if isinstance(action, ToolCall)], state, state_dir
        )
        state.step += 1
    return decisions


def thinking_turns(count: int) -> list[ModelTurn]:
    return [
        ModelTurn(
            thinking=f"Thought {index}: check the log.",
            text=f"Turn {index}.",
            tool_calls=[ToolUse("emit", {"text": f"line {index}"})],
        )
        for index in range(count)
    ]


def test_claude_thinking_goes_back_unchanged_with_its_signature_while_the_loop_continues(tmp_path: Path) -> None:
    with ModelServer(thinking_turns(4), model="claude-sonnet-5-5") as server:
        policy = make_policy(server, "anthropic", True, model="claude-sonnet-5-5")
        decisions = drive(policy, ProjectState(goal="g"), tmp_path, 4)
        policy.close()
    assert server.rejections == []
    last = server.requests[-1].messages
    thinking = [
        block
        for message in last
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "thinking"
    ]
    assert [block["thinking"] for block in thinking] == [f"Thought {index}: check the log." for index in range(3)]
    assert all(block["signature"].startswith("sig-") for block in thinking)
    assert server.requests[0].body["thinking"] == {"type": "adaptive", "display": "summarized"}
    # The readable thinking is the decision's thought (and so the journal's).
    assert decisions[0].thought.startswith("Thought 0: check the log.") and "Turn 0." in decisions[0].thought


def _claude(server: ModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key", base_url=server.anthropic_base_url, max_retries=0)


def test_the_server_refuses_changed_missing_or_rebound_thinking_and_invalid_ids() -> None:
    turn = ModelTurn(thinking="Plan: read the log.", tool_calls=[ToolUse("emit", id="toolu_1")])
    with ModelServer([turn, *[ModelTurn(text="ok")] * 6], model="claude-sonnet-5-5") as server:
        client = _claude(server)
        first = [{"role": "user", "content": "Begin."}]
        reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=64, system="s", messages=first)
        thinking = reply.content[0].model_dump()
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}
        tool_use = {"type": "tool_use", "id": "toolu_1", "name": "emit", "input": {}}

        def send(blocks: list[dict[str, object]], system: str = "s", start: str = "Begin.") -> None:
            messages = [{"role": "user", "content": start}, {"role": "assistant", "content": blocks}, result]
            client.messages.create(model="claude-sonnet-5-5", max_tokens=64, system=system, messages=messages)

        send([thinking, tool_use])  # unchanged: accepted
        for blocks, system, start, message in [
            ([{**thinking, "thinking": "Plan: edited."}, tool_use], "s", "Begin.", "Invalid `signature`"),
            ([thinking, tool_use], "another system prompt", "Begin.", "bound to a different conversation"),
            ([thinking, tool_use], "s", "Begin, edited.", "bound to a different conversation"),
            ([tool_use, thinking], "s", "Begin.", "must come before"),
        ]:
            with pytest.raises(anthropic.BadRequestError, match=message):
                send(blocks, system, start)
        with pytest.raises(anthropic.BadRequestError, match="should match pattern"):
            bad = {**tool_use, "id": "functions.emit:0"}
            client.messages.create(
                model="claude-sonnet-5-5",
                max_tokens=64,
                messages=[
                    {"role": "user", "content": "Begin."},
                    {"role": "assistant", "content": [bad]},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "functions.emit:0", "content": "x"}],
                    },
                ],
            )
        client.close()


def test_a_compaction_drops_the_thinking_it_would_invalidate_and_stays_accepted(tmp_path: Path) -> None:
    turns = [
        ModelTurn(thinking=f"Thought {index}.", tool_calls=[ToolUse("emit", {"text": "x", "repeat": 400})])
        for index in range(14)
    ]
    small = {"window_budget_tokens": 3_000, "state_document_max_tokens": 800, "keep_recent_turns": 4}
    with ModelServer(turns, model="claude-opus-5-5") as server:
        policy = make_policy(server, "anthropic", False, model="claude-opus-5-5", context=small)
        drive(policy, ProjectState(goal="g"), tmp_path, 14)
        policy.close()
    assert server.rejections == []
    assert any('"type": "thinking"' in request.all_text() for request in server.requests[5:])


def test_reasoning_content_goes_back_on_every_tool_call_message(tmp_path: Path) -> None:
    for field in ("reasoning_content", "reasoning"):  # SGLang, DeepSeek and Kimi; vLLM 0.33
        with ModelServer(thinking_turns(3), reasoning_field=field) as server:
            policy = make_policy(server, "chat", True)
            decisions = drive(policy, ProjectState(goal="g"), tmp_path / field, 3)
            policy.close()
        assert server.rejections == []
        assistants = [message for message in server.requests[-1].messages if message["role"] == "assistant"]
        assert [message[field] for message in assistants] == ["Thought 0: check the log.", "Thought 1: check the log."]
        assert decisions[1].thought.startswith("Thought 1")


def test_the_server_refuses_a_missing_reasoning_content_and_tools_for_models_that_need_responses() -> None:
    with ModelServer([ModelTurn(text="ok")] * 3, reasoning_field="reasoning_content") as server:
        client = openai.OpenAI(api_key="test-key", base_url=server.openai_base_url, max_retries=0)
        call = {"id": "call_1", "type": "function", "function": {"name": "emit", "arguments": "{}"}}
        messages = [
            {"role": "user", "content": "Begin."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        ]
        with pytest.raises(openai.BadRequestError, match="Missing `reasoning_content`"):
            client.chat.completions.create(model="deepseek-v4-pro", messages=messages)  # type: ignore[arg-type]
        tools = [{"type": "function", "function": {"name": "emit", "parameters": {"type": "object"}}}]
        with pytest.raises(openai.BadRequestError, match="use /v1/responses"):
            client.chat.completions.create(
                model="gpt-6-sol",
                tools=tools,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": "Begin."}],
            )
        client.close()


def test_responses_reasoning_items_are_replayed_with_their_encrypted_content(tmp_path: Path) -> None:
    state = ProjectState(goal="g")
    with ModelServer(thinking_turns(3), model="gpt-6-sol") as server:
        policy = make_policy(server, "openai", False)
        drive(policy, state, tmp_path, 3)
        policy.close()
    assert server.rejections == []
    assert {request.api for request in server.requests} == {"responses"}
    last = server.requests[-1].body
    reasoning = [item for item in last["input"] if item.get("type") == "reasoning"]
    assert len(reasoning) == 2 and all(item["encrypted_content"].startswith("enc-") for item in reasoning)
    assert last["store"] is False and last["prompt_cache_key"] == state.run_id


def test_the_server_refuses_changed_encrypted_reasoning(tmp_path: Path) -> None:
    with ModelServer([*thinking_turns(1), ModelTurn(text="ok")], model="gpt-6-sol") as server:
        client = openai.OpenAI(api_key="test-key", base_url=server.openai_base_url, max_retries=0)
        reply = client.responses.create(
            model="gpt-6-sol", input="Begin.", store=False, include=["reasoning.encrypted_content"]
        )
        items = [item.model_dump(exclude_none=True) for item in reply.output]
        items[0]["encrypted_content"] = "enc-forged"
        outputs = [{"type": "function_call_output", "call_id": items[-1]["call_id"], "output": "x"}]
        with pytest.raises(openai.BadRequestError, match="could not be verified"):
            client.responses.create(model="gpt-6-sol", input=[*items, *outputs], store=False)  # type: ignore[list-item]
        client.close()


@pytest.mark.parametrize("provider", ["chat", "openai"])
def test_broken_tool_arguments_are_sent_back_wrapped_as_json(provider: ProviderName, tmp_path: Path) -> None:
    script = [ModelTurn(tool_calls=[ToolUse("emit", '{"text": "cut off')]), ModelTurn(tool_calls=[ToolUse("emit")])]
    with ModelServer(script) as server:
        policy = make_policy(server, provider, True)
        drive(policy, ProjectState(goal="g"), tmp_path, 2)
        policy.close()
    text = server.requests[1].all_text()
    assert server.rejections == [] and '\\"unparsed_arguments\\": \\"{\\\\\\"text\\\\\\": \\\\\\"cut off\\"' in text


def test_call_ids_with_other_characters_are_mapped_so_the_run_can_move_to_anthropic(tmp_path: Path) -> None:
    script = [
        ModelTurn(tool_calls=[ToolUse("emit", {"text": "a"}, id="functions.emit:0")]),
        ModelTurn(tool_calls=[ToolUse("emit", {"text": "b"}, id="functions.emit:0")]),
    ]
    state = ProjectState(goal="g")
    with ModelServer(script) as server:
        policy = make_policy(server, "chat", False)
        [first] = drive(policy, state, tmp_path, 1)[0].actions
        policy.close()
    assert isinstance(first, ToolCall) and first.id.startswith("functions_emit_0_")
    with ModelServer([ModelTurn(tool_calls=[ToolUse("finish", {"summary": "done"})])]) as server:
        policy = make_policy(server, "anthropic", False)  # the operator switched providers and resumed
        observations = execute([first], state, tmp_path)
        policy.decide(view(state, tmp_path, observations=observations))
        policy.close()
    assert server.rejections == [] and server.requests[0].tool_call_ids() == [first.id]


def test_tool_calls_written_as_text_ask_for_the_servers_tool_call_parser(tmp_path: Path) -> None:
    text = '<tool_call>\n{"name": "emit", "arguments": {"text": "x"}}\n</tool_call>'
    with ModelServer([ModelTurn(text=text)]) as server:
        policy = make_policy(server, "chat", False)
        [ask] = policy.decide(view(ProjectState(goal="g"), tmp_path)).actions
        policy.close()
    assert "--tool-call-parser" in ask.question and "--enable-auto-tool-choice" in ask.question  # type: ignore[union-attr]


@pytest.mark.parametrize("provider", ["anthropic", "chat", "openai"])
def test_a_context_window_overflow_compacts_and_asks_again(provider: ProviderName, tmp_path: Path) -> None:
    from twin.model_api.script import Fault

    overflow = (
        ModelTurn(stop_reason="model_context_window_exceeded") if provider == "anthropic" else Fault.context_exceeded()
    )
    script = [
        *[ModelTurn(tool_calls=[ToolUse("emit", {"text": "y", "repeat": 2_000})])] * 6,
        overflow,
        ModelTurn(tool_calls=[ToolUse("finish", {"summary": "fits"})]),
    ]
    with ModelServer(script) as server:
        policy = make_policy(server, provider, False)
        decisions = drive(policy, ProjectState(goal="g"), tmp_path, 7)
        policy.close()
    assert decisions[-1].actions[0].kind == "finish"  # type: ignore[union-attr]
    before, after = server.requests[-2], server.requests[-1]
    assert after.raw_size < before.raw_size and server.rejections == []


def test_the_context_budget_follows_the_servers_context_length() -> None:
    with ModelServer(context_window=16_000) as server:
        policy = make_policy(server, "chat", False)
        settings = policy.budget.settings([], "system prompt")
        policy.close()
    assert 1_000 <= settings.window_budget_tokens < 16_000 - 4_000


def test_the_server_refuses_thinking_left_out_after_an_earlier_block_came_back() -> None:
    turns = [
        ModelTurn(thinking=f"Plan {index}.", tool_calls=[ToolUse("emit", id=f"toolu_{index}")]) for index in range(2)
    ]
    with ModelServer([*turns, ModelTurn(text="ok")], model="claude-sonnet-5-5") as server:
        client = _claude(server)
        messages: list[dict[str, object]] = [{"role": "user", "content": "Begin."}]
        blocks: list[list[dict[str, object]]] = []
        for index in range(2):
            reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=64, messages=messages)  # type: ignore[arg-type]
            blocks.append([block.model_dump(exclude_none=True) for block in reply.content])
            messages += [
                {"role": "assistant", "content": blocks[-1]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{index}", "content": "x"}]},
            ]
        messages[3] = {"role": "assistant", "content": blocks[1][1:]}  # the newest thinking left out
        with pytest.raises(anthropic.BadRequestError, match="left out"):
            client.messages.create(model="claude-sonnet-5-5", max_tokens=64, messages=messages)  # type: ignore[arg-type]
        client.close()


def _without_markers(value: object) -> object:
    if isinstance(value, dict):
        return {key: _without_markers(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(item) for item in value]
    return value


@pytest.mark.parametrize("provider", ["anthropic", "openai", "chat"])
def test_the_conversation_is_append_only_and_carries_the_state_once_then_its_changes(
    provider: ProviderName, tmp_path: Path
) -> None:
    turns = [
        ModelTurn(
            thinking=f"T{index}",
            tool_calls=[
                ToolUse("update_state", {"findings": [{"summary": f"finding {index}", "evidence": [f"e{index}"]}]})
            ],
        )
        for index in range(4)
    ]
    with ModelServer(turns, reasoning_field="reasoning_content") as server:
        policy = make_policy(server, provider, False)
        drive(policy, ProjectState(goal="serve it"), tmp_path, 4)
        policy.close()
    assert server.rejections == []
    requests = server.requests
    for earlier, later in itertools.pairwise(requests):
        before, after = _without_markers(earlier.messages), _without_markers(later.messages)
        assert isinstance(before, list) and isinstance(after, list) and after[: len(before)] == before
    texts = requests[-1].user_texts()
    assert sum("<state_document>" in text for text in texts) == 1
    assert sum("<state_update>" in text for text in texts) == 3
    assert "finding 2" in texts[-1] and "finding 1" not in texts[-1]  # only what changed
    assert "Left before the run stops to ask" in texts[-1]


def test_the_token_estimate_is_corrected_from_the_input_tokens_the_api_reports(tmp_path: Path) -> None:
    with ModelServer(thinking_turns(3)) as server:
        policy = make_policy(server, "chat", False)
        before = policy.budget.chars_per_token
        drive(policy, ProjectState(goal="g"), tmp_path, 3)
        policy.close()
    # The scripted server counts 4 characters a token; the estimate moves from 3.5 towards it.
    assert before == 3.5 and 3.5 < policy.budget.chars_per_token <= 4.5
