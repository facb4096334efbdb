"""The providers through the real SDKs against the loopback server, in both wire formats and both modes."""

from __future__ import annotations

import pytest
from support.llm_harness import MODE_IDS, MODES, ProviderName, llm_section

from agent.policies.llm.build import make_provider
from agent.policies.llm.reply import ModelRequest, Provider
from agent.policies.llm.settings import LlmSettings
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, ToolResultRecord, UserTurn, paired_results
from twin.model_api.script import ModelTurn, ToolUse
from twin.model_api.server import ModelServer

TOOLS = [
    {"name": "emit", "description": "Return text.", "input_schema": {"type": "object"}},
    {"name": "tail_log", "description": "Read a log.", "input_schema": {"type": "object"}},
]


def provider_for(server: ModelServer, provider: ProviderName, stream: bool) -> Provider:
    settings = LlmSettings.model_validate(llm_section(server, provider, stream))
    return make_provider(settings, environ={"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"})


def first_request(system: str = "You are a test.") -> ModelRequest:
    return ModelRequest(system=system, tools=TOOLS, turns=[UserTurn(notes=["Begin."])])


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_text_and_several_tool_calls_come_back_parsed(provider: ProviderName, stream: bool) -> None:
    turn = ModelTurn(
        text="Two reads at once.",
        tool_calls=[ToolUse("emit", {"text": "a", "repeat": 2}), ToolUse("tail_log", {"name": "engine", "lines": 40})],
    )
    with ModelServer([turn]) as server:
        model = provider_for(server, provider, stream)
        reply = model.complete(first_request())
        model.close()
        request = server.requests[0]
    assert reply.text == "Two reads at once."
    assert [(call.name, call.arguments) for call in reply.calls] == [
        ("emit", {"text": "a", "repeat": 2}),
        ("tail_log", {"name": "engine", "lines": 40}),
    ]
    assert len({call.id for call in reply.calls}) == 2 and all(call.id for call in reply.calls)
    assert reply.stop_reason in ("tool_use", "tool_calls")
    assert reply.tokens.input_tokens > 0 and reply.tokens.output_tokens > 0
    assert request.stream is stream
    credential = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    assert credential.endswith("test-key")
    assert request.tool_names() == ["emit", "tail_log"]


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_malformed_tool_arguments_are_kept_as_raw_text(provider: ProviderName, stream: bool) -> None:
    turn = ModelTurn(tool_calls=[ToolUse("emit", '{"text": "unterminated'), ToolUse("emit", "[1, 2]")])
    with ModelServer([turn]) as server:
        model = provider_for(server, provider, stream)
        reply = model.complete(first_request())
        model.close()
    assert [call.arguments for call in reply.calls] == ['{"text": "unterminated', "[1, 2]"]


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_reasoning_is_read_past(provider: ProviderName, stream: bool) -> None:
    turn = ModelTurn(
        thinking="The log says OOM; lower the memory fraction.",
        text="Relaunching.",
        tool_calls=[ToolUse("emit", {"text": "x"})],
    )
    with ModelServer([turn]) as server:
        model = provider_for(server, provider, stream)
        reply = model.complete(first_request())
        model.close()
    assert reply.text == "Relaunching."
    assert [call.name for call in reply.calls] == ["emit"]


@pytest.mark.parametrize(("provider", "stream"), MODES, ids=MODE_IDS)
def test_tool_results_travel_in_the_api_format_matched_by_id(provider: ProviderName, stream: bool) -> None:
    calls = [
        ToolCallRecord(id="call_a", name="emit", arguments={"text": "x"}),
        ToolCallRecord(id="call_b", name="tail_log", arguments='{"oops'),
        ToolCallRecord(id="call_c", name="emit", arguments={}),
    ]
    # call_c has no result and an unknown id is answered: paired_results repairs both before sending.
    request = ModelRequest(
        system="s",
        tools=TOOLS,
        turns=paired_results(
            [
                UserTurn(notes=["Begin."]),
                AssistantTurn(text="Reading.", calls=calls),
                UserTurn(
                    results=[
                        ToolResultRecord(call_id="call_b", name="tail_log", content="bad JSON", is_error=True),
                        ToolResultRecord(call_id="call_a", name="emit", content='{"text": "x"}'),
                        ToolResultRecord(call_id="call_zz", name="emit", content="stray"),
                    ],
                    notes=["A note."],
                ),
            ]
        ),
    )
    with ModelServer([ModelTurn(text="ok", tool_calls=[ToolUse("emit")])]) as server:
        model = provider_for(server, provider, stream)
        model.complete(request)
        model.close()
        seen = server.requests[0]
    assert server.rejections == []
    assert seen.tool_call_ids() == ["call_a", "call_b", "call_c"]
    results = {result.call_id: result for result in seen.tool_results()}
    assert set(results) == {"call_a", "call_b", "call_c"}
    assert results["call_b"].is_error and "bad JSON" in results["call_b"].content
    assert not results["call_a"].is_error
    assert results["call_c"].is_error and "No result was recorded" in results["call_c"].content
    assert "A note." in seen.last_user_text()
    assert "call_zz" in seen.last_user_text() and "stray" in seen.last_user_text()


def test_anthropic_requests_mark_the_stable_prefix_for_caching_and_read_it_back() -> None:
    with ModelServer(
        [ModelTurn(text="one", tool_calls=[ToolUse("emit")]), ModelTurn(text="two", tool_calls=[ToolUse("emit")])]
    ) as server:
        model = provider_for(server, "anthropic", False)
        first = model.complete(first_request("A long stable system prompt. " * 50))
        second = model.complete(first_request("A long stable system prompt. " * 50))
        model.close()
        body = server.requests[0].body
    # The stable prefix outlives tool calls that block for up to an hour (launch_engine, run_bench).
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert first.tokens.cache_write_tokens > 0 and first.tokens.cache_read_tokens == 0
    assert first.tokens.cache_write_1h_tokens == first.tokens.cache_write_tokens
    assert second.tokens.cache_read_tokens >= first.tokens.cache_write_tokens
    assert second.tokens.input_tokens == first.tokens.input_tokens


@pytest.mark.parametrize(("provider", "stream"), [("openai", False), ("openai", True), ("chat", True)])
def test_openai_cached_prompt_tokens_are_counted(provider: ProviderName, stream: bool) -> None:
    with ModelServer(
        [ModelTurn(text="one", tool_calls=[ToolUse("emit")]), ModelTurn(text="two", tool_calls=[ToolUse("emit")])]
    ) as server:
        model = provider_for(server, provider, stream)
        system = "Long stable instructions for the deployment. " * 200
        first = model.complete(first_request(system))
        second = model.complete(first_request(system))
        model.close()
    assert first.tokens.cache_read_tokens == 0
    assert 1024 <= second.tokens.cache_read_tokens <= second.tokens.input_tokens


def test_output_limits_and_sampling_follow_the_model_family_not_the_url() -> None:
    keys = {"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}
    cases = [
        ("anthropic", "claude-sonnet-5-5", "auto"),
        ("openai", "gpt-6-sol", "chat"),
        ("openai", "gpt-6-sol", "responses"),
        ("openai", "gpt-4.1", "chat"),
        ("openai", "qwen3-32b", "chat"),
    ]
    with ModelServer([ModelTurn(text="a")] * 2 * len(cases)) as server:
        for provider, name, wire in cases:
            base_url = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
            for limit in (None, 2_000):
                model = make_provider(
                    LlmSettings(
                        provider=provider,
                        model=name,
                        base_url=base_url,
                        wire=wire,
                        max_output_tokens=limit,
                        temperature=0.2,
                        effort="low",
                    ),
                    environ=keys,
                )
                model.complete(ModelRequest(system="s", tools=[], turns=[UserTurn(notes=["Begin."])]))
                model.close()
        bodies = [request.body for request in server.requests]
    assert server.rejections == []
    claude, claude_set, chat_reasoning, chat_reasoning_set, responses, responses_set = bodies[:6]
    assert claude["max_tokens"] == 32_000 and claude_set["max_tokens"] == 2_000
    assert claude["output_config"] == {"effort": "low"}
    # A reasoning model takes max_completion_tokens and no temperature, whatever URL serves it.
    assert chat_reasoning_set["max_completion_tokens"] == 2_000 and "max_tokens" not in chat_reasoning_set
    assert "temperature" not in chat_reasoning and chat_reasoning["reasoning_effort"] == "low"
    assert responses_set["max_output_tokens"] == 2_000
    assert responses["reasoning"] == {"summary": "auto", "effort": "low"}
    assert responses["store"] is False and responses["include"] == ["reasoning.encrypted_content"]
    older, older_set, local, local_set = bodies[6:]
    assert older_set["max_tokens"] == 2_000 and older["temperature"] == 0.2
    # A compatible server (vLLM, SGLang) given no limit allows what the context has room for.
    assert "max_tokens" not in local and "max_completion_tokens" not in local and local_set["max_tokens"] == 2_000
