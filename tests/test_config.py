"""Configuration layers: defaults < file < environment < flags, with one-line errors naming the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import choose_policy, load_config
from agent.events import UsageError
from tools.redact import redact_text


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_layer(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    assert config.limits.max_steps == 200 and config.notify.channels == [] and config.policy is None


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    _write(tmp_path / "agent.toml", """
policy = "runbook"
[limits]
max_steps = 10
max_cost_usd = 3.5
[notify.smtp]
host = "mail.example"
port = 2525
""")
    environ = {"OPSLOOP_MAX_STEPS": "20", "OPSLOOP_SMTP_PORT": "2526",
               "OPSLOOP_NOTIFY": "desktop, ntfy:http://127.0.0.1:1/t"}
    config = load_config(tmp_path, environ=environ, overrides={"limits": {"max_steps": 30}})
    assert config.policy == "runbook"  # file
    assert config.limits.max_cost_usd == 3.5  # file, untouched by other layers
    assert config.limits.max_steps == 30  # flags beat environment beat file
    assert config.notify.smtp.host == "mail.example" and config.notify.smtp.port == 2526
    assert config.notify.channels == ["desktop", "ntfy:http://127.0.0.1:1/t"]


def test_an_explicit_config_file_replaces_the_state_directory_one(tmp_path: Path) -> None:
    _write(tmp_path / "agent.toml", "policy = \"runbook\"\n")
    other = _write(tmp_path / "other.toml", "policy = \"scripted\"\nscript = \"plan.json\"\n")
    assert load_config(tmp_path, other, environ={}).policy == "scripted"


@pytest.mark.parametrize(("setup", "message"), [
    (lambda d: _write(d / "agent.toml", "[limits]\nmax_steps = \"many\"\n"),
     "config file .*agent.toml: limits.max_steps"),
    (lambda d: _write(d / "agent.toml", "[limits\n"), "not valid TOML"),
    (lambda d: _write(d / "agent.toml", "colour = \"blue\"\n"), "colour: Extra inputs are not permitted"),
])
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
