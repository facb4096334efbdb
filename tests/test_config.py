"""Configuration layers: defaults < file < environment < flags, with one-line errors naming the source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_agent, write_script

from agent.config import choose_policy, describe_sources, load_config, read_layers, validate
from agent.events import UsageError
from agent.policies.runbook.policy import RunbookPolicy
from agent.wiring import build_policy
from tools.redact import redact_text


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_layer(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    assert config.limits.max_steps == 200 and config.notify.channels == [] and config.policy is None


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    _write(
        tmp_path / "agent.toml",
        """
policy = "runbook"
[limits]
max_steps = 10
max_cost_usd = 3.5
[notify.smtp]
host = "mail.example"
port = 2525
""",
    )
    environ = {
        "OPSLOOP_MAX_STEPS": "20",
        "OPSLOOP_SMTP_PORT": "2526",
        "OPSLOOP_NOTIFY": "desktop, ntfy:http://127.0.0.1:1/t",
    }
    config = load_config(tmp_path, environ=environ, overrides={"limits": {"max_steps": 30}})
    assert config.policy == "runbook"  # file
    assert config.limits.max_cost_usd == 3.5  # file, untouched by other layers
    assert config.limits.max_steps == 30  # flags beat environment beat file
    assert config.notify.smtp.host == "mail.example" and config.notify.smtp.port == 2526
    assert config.notify.channels == ["desktop", "ntfy:http://127.0.0.1:1/t"]


def test_an_explicit_config_file_replaces_the_state_directory_one(tmp_path: Path) -> None:
    _write(tmp_path / "agent.toml", 'policy = "runbook"\n')
    other = _write(tmp_path / "other.toml", 'policy = "scripted"\nscript = "plan.json"\n')
    assert load_config(tmp_path, other, environ={}).policy == "scripted"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            lambda d: _write(d / "agent.toml", '[limits]\nmax_steps = "many"\n'),
            "config file .*agent.toml: limits.max_steps",
        ),
        (lambda d: _write(d / "agent.toml", "[limits\n"), "not valid TOML"),
        (lambda d: _write(d / "agent.toml", 'colour = "blue"\n'), "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_files_give_one_line_naming_file_and_field(tmp_path: Path, setup: object, message: str) -> None:
    setup(tmp_path)  # type: ignore[operator]
    with pytest.raises(UsageError, match=message) as raised:
        load_config(tmp_path, environ={})
    assert "\n" not in str(raised.value)


def test_bad_environment_and_flag_values_name_their_layer(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"environment: limits\.max_steps"):
        load_config(tmp_path, environ={"OPSLOOP_MAX_STEPS": "lots"})
    with pytest.raises(UsageError, match="command line: policy"):
        load_config(tmp_path, environ={}, overrides={"policy": "guess"})
    with pytest.raises(UsageError, match="does not exist"):
        load_config(tmp_path, tmp_path / "missing.toml", environ={})


def test_policy_choice_defaults_to_llm_only_with_an_api_key(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    assert choose_policy(config, {}) == "runbook"
    assert choose_policy(config, {"ANTHROPIC_API_KEY": "k"}) == "llm"
    assert choose_policy(config, {"OPENAI_API_KEY": "k"}) == "llm"
    scripted = load_config(tmp_path, environ={}, overrides={"script": "plan.json"})
    assert choose_policy(scripted, {"OPENAI_API_KEY": "k"}) == "scripted"
    configured = load_config(tmp_path, environ={"OPSLOOP_POLICY": "runbook"})
    assert choose_policy(configured, {"OPENAI_API_KEY": "k"}) == "runbook"


def test_the_smtp_password_is_masked_wherever_it_appears(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={"OPSLOOP_SMTP_PASSWORD": "correct-horse-battery"})
    assert config.notify.smtp.password is not None
    assert "correct-horse-battery" not in repr(config)
    assert redact_text("login failed for correct-horse-battery") == "login failed for [REDACTED]"


def test_the_runbook_section_is_validated_and_reaches_the_policy(tmp_path: Path) -> None:
    _write(tmp_path / "agent.toml", "[runbook]\npeak_concurrency = 8\n")
    policy = build_policy("runbook", load_config(tmp_path, environ={}), lambda line: None)
    assert isinstance(policy, RunbookPolicy) and policy.settings.peak_concurrency == 8
    _write(tmp_path / "agent.toml", "[runbook]\npeak_concurency = 8\n")
    with pytest.raises(UsageError, match=r"runbook\.peak_concurency: Extra inputs are not permitted"):
        load_config(tmp_path, environ={})


def test_the_simulated_host_gets_short_benchmarks_unless_the_runbook_is_configured(tmp_path: Path) -> None:
    default = build_policy("runbook", load_config(tmp_path, environ={}), lambda line: None, simulated=True)
    assert isinstance(default, RunbookPolicy) and default.settings.peak_prompts == 64
    _write(tmp_path / "agent.toml", "[runbook]\npeak_prompts = 500\n")
    configured = build_policy("runbook", load_config(tmp_path, environ={}), lambda line: None, simulated=True)
    assert isinstance(configured, RunbookPolicy) and configured.settings.peak_prompts == 500


def test_each_effective_setting_names_the_layer_it_came_from(tmp_path: Path) -> None:
    _write(tmp_path / "agent.toml", '[limits]\nmax_steps = 10\nmax_cost_usd = 3.5\n[llm]\nprovider = "openai"\n')
    layers = read_layers(
        tmp_path,
        environ={"OPSLOOP_MAX_STEPS": "20", "OPSLOOP_LLM_MODEL": "m"},
        overrides={"limits": {"max_steps": 30}, "notify": {"channels": ["desktop"]}},
    )
    sources = {source.key: source for source in describe_sources(validate(layers), layers)}
    assert (sources["limits.max_steps"].value, sources["limits.max_steps"].kind) == (30, "flag")
    cost = sources["limits.max_cost_usd"]
    assert cost.kind == "file" and cost.detail.endswith("agent.toml")
    assert (sources["llm.model"].kind, sources["llm.model"].detail) == ("environment", "OPSLOOP_LLM_MODEL")
    assert sources["notify.channels"].value == ["desktop"] and sources["notify.channels"].kind == "flag"
    assert sources["notify.smtp.port"].kind == "default" and sources["notify.smtp.port"].value == 25


def test_config_show_prints_the_run_settings_with_their_sources_and_masks_secrets(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    _write(state_dir / "agent.toml", '[notify.smtp]\npassword = "correct-horse-battery"\n')
    shown = run_agent("config", "show", "--state-dir", state_dir, "--json")
    assert shown.returncode == 0, shown.stderr
    settings = {item["setting"]: item for item in json.loads(shown.stdout)["settings"]}
    assert settings["notify.smtp.password"]["source"] == "file"
    assert "correct-horse-battery" not in shown.stdout
    text = run_agent("config", "show", "--state-dir", state_dir)
    assert "limits.max_steps" in text.stdout and "(default)" in text.stdout


def test_config_show_includes_the_flags_the_run_was_started_with(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = write_script(tmp_path / "done.json", [{"finish": "nothing to do"}])
    started = run_agent(
        "run", "-g", "g", "--policy", "scripted", "--script", script, "--max-steps", "7", "--state-dir", state_dir
    )
    assert started.returncode == 0, started.stderr
    shown = run_agent("config", "show", "--state-dir", state_dir, "--json")
    settings = {item["setting"]: item for item in json.loads(shown.stdout)["settings"]}
    assert (settings["limits.max_steps"]["value"], settings["limits.max_steps"]["source"]) == (7, "flag")
    assert (settings["policy"]["value"], settings["policy"]["source"]) == ("scripted", "flag")
