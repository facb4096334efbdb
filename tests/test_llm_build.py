"""Building the policy from configuration; prices; the prompt files."""

from __future__ import annotations

import typing
from pathlib import Path

import anthropic
import openai
import pytest

from agent.config import load_config
from agent.events import UsageError
from agent.policies.llm.build import NO_KEY, api_key_for, build_llm_policy
from agent.policies.llm.pricing import FREE, UNKNOWN, ModelPrice, TokenCounts, cost_usd, price_for
from agent.policies.llm.settings import LlmSettings
from prompts import PromptNotFound, available_prompts, load_prompt


def test_the_llm_section_of_the_agent_config_builds_the_policy(tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text(
        '[llm]\nprovider = "openai"\nmodel = "gpt-6-luna"\nbase_url = "http://127.0.0.1:30000/v1"\n'
        "[llm.retry]\nmax_attempts = 3\n[llm.prices.gpt-6-luna]\ninput = 0.5\noutput = 1.5\n"
    )
    config = load_config(tmp_path, environ={})
    policy = build_llm_policy(config.llm, environ={})
    assert policy.name == "llm" and policy.provider.name == "openai" and policy.provider.model == "gpt-6-luna"
    assert policy.settings.retry.max_attempts == 3 and policy.price == ModelPrice(input=0.5, output=1.5)
    policy.close()


def test_a_bad_llm_section_is_a_usage_error_naming_the_field_when_the_config_loads(tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text('[llm]\nprovider = "gemini"\n')
    with pytest.raises(UsageError, match=r"agent\.toml: llm\.provider"):
        load_config(tmp_path, environ={})
    with pytest.raises(UsageError, match=r"command line: llm\.retry\.max_attempts"):
        load_config(tmp_path / "elsewhere", environ={}, overrides={"llm": {"retry": {"max_attempts": 0}}})


def test_the_api_key_comes_from_the_environment_and_is_required_for_hosted_apis() -> None:
    assert api_key_for(LlmSettings(provider="anthropic"), {"ANTHROPIC_API_KEY": "k-123456"}) == "k-123456"
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        api_key_for(LlmSettings(provider="anthropic"), {})
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        api_key_for(LlmSettings(provider="openai"), {})
    # A local OpenAI-compatible server (SGLang, vLLM, llama.cpp) usually takes no key.
    assert api_key_for(LlmSettings(provider="openai", base_url="http://127.0.0.1:8000/v1"), {}) == NO_KEY


def test_default_models_are_current_and_priced() -> None:
    for provider in ("anthropic", "openai"):
        settings = LlmSettings(provider=provider)
        assert price_for(settings.model_name) != FREE


def test_prices_match_dated_names_and_overrides_win() -> None:
    assert price_for("claude-sonnet-5-5-20260930") == price_for("claude-sonnet-5-5")
    assert price_for("claude-opus-4-1-20250805").input == 15.0
    assert price_for("gpt-5.5-2026-04-23") == price_for("gpt-5.5")
    # A longer name is another model, never priced as the shorter one.
    assert price_for("gpt-5.4-nano") == UNKNOWN and price_for("gpt-5-pro") == UNKNOWN
    assert price_for("claude-opus-4-10") == UNKNOWN
    assert price_for("Qwen/Qwen3-235B-A22B", local=True) == FREE
    override = ModelPrice(input=1.0, output=2.0)
    assert price_for("claude-sonnet-5-5", {"claude-sonnet-5-5": override}) == override


def _listed(alias: object) -> set[str]:
    names: set[str] = set()
    for argument in typing.get_args(alias):
        names |= {value for value in typing.get_args(argument) if isinstance(value, str)} or _listed(argument)
    return names


def test_every_model_the_sdks_list_has_a_price_or_an_explicit_unknown() -> None:
    listed = (
        _listed(anthropic.types.Model)
        | _listed(openai.types.shared.ChatModel)
        | _listed(openai.types.shared.ResponsesModel)
    )
    assert len(listed) > 50  # both SDKs list their models as Literal names
    for name in listed:
        price = price_for(name)
        assert price.unknown or price.input > 0, name


def test_an_unknown_price_refuses_an_explicit_cost_limit(tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text(
        '[llm]\nprovider = "anthropic"\nmodel = "claude-mythos-5-2"\n[limits]\nmax_cost_usd = 5\n'
    )
    config = load_config(tmp_path, environ={})
    with pytest.raises(UsageError, match=r"price of model claude-mythos-5-2 is unknown"):
        build_llm_policy(
            config.llm,
            environ={"ANTHROPIC_API_KEY": "k-123456"},
            cost_limited="max_cost_usd" in config.limits.model_fields_set,
        )
    (tmp_path / "agent.toml").write_text('[llm]\nprovider = "anthropic"\nmodel = "claude-mythos-5-2"\n')
    config = load_config(tmp_path, environ={})
    assert "max_cost_usd" not in config.limits.model_fields_set
    policy = build_llm_policy(config.llm, environ={"ANTHROPIC_API_KEY": "k-123456"})
    assert policy.price.unknown  # counted as 0, marked unknown, only refused when a cost limit is set
    policy.close()


def test_cost_bills_cached_reads_and_cache_writes_at_their_own_rates() -> None:
    price = ModelPrice(input=2.0, output=10.0, cache_write=2.5, cache_read=0.2)
    tokens = TokenCounts(
        input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=600_000, cache_write_tokens=300_000
    )
    assert cost_usd(tokens, price) == pytest.approx(0.1 * 2.0 + 0.6 * 0.2 + 0.3 * 2.5 + 0.1 * 10.0)
    plain = ModelPrice(input=2.0, output=10.0)
    assert cost_usd(tokens, plain) == pytest.approx(1.0 * 2.0 + 0.1 * 10.0)


def test_prompts_are_package_files() -> None:
    assert "system" in available_prompts()
    text = load_prompt("system")
    assert "ask_human" in text and "evidence" in text and "SGLang" in text
    with pytest.raises(PromptNotFound, match=r"available: .*system"):
        load_prompt("nope")
    with pytest.raises(PromptNotFound):
        load_prompt("../pyproject")


def test_the_prompt_and_the_tools_state_the_same_finish_criteria_and_how_long_calls_block() -> None:
    from agent.policies.llm.builtin_tools import FINISH_CRITERIA, policy_tool_schemas
    from tools.catalog import default_registry

    prompt = load_prompt("system")
    assert FINISH_CRITERIA in prompt and FINISH_CRITERIA in policy_tool_schemas()[1]["description"]
    assert "three failed attempts" in prompt and "Budget section" in prompt
    for schema in [*default_registry().schemas(), *policy_tool_schemas()]:
        assert "Blocks: " in schema["description"], schema["name"]
        for name, field in schema["input_schema"].get("properties", {}).items():
            if field.get("type") in ("integer", "number") and name != "seed":
                bounded = any(key in field for key in ("minimum", "exclusiveMinimum", "maximum"))
                assert bounded or field.get("description"), f"{schema['name']}.{name}"


def test_one_hour_cache_writes_are_billed_at_their_own_rate() -> None:
    price = ModelPrice(input=2.0, output=10.0, cache_write=2.5, cache_read=0.2)
    tokens = TokenCounts(input_tokens=1_000_000, cache_write_tokens=1_000_000, cache_write_1h_tokens=600_000)
    assert cost_usd(tokens, price) == pytest.approx(0.4 * 2.5 + 0.6 * 4.0)
