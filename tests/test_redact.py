"""Secret masking: by variable or key name, by known value, and by token shape."""

from __future__ import annotations

import pytest

from tools.redact import MASK, is_secret_name, redact_env, redact_text, redact_value


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "password",
        "X-Auth-Token",
        "apiKey",
        "OPSLOOP_SMTP_PASSWORD",
        "client_secret",
        "Authorization",
        "HFToken",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "tokenizer",
        "input_tokens",
        "author",
        "keyframe",
        "monkey",
        "num_keys",
        "cached_input_tokens",
        "tokenizer_path",
        "PWD",
        "OLDPWD",
    ],
)
def test_names_that_only_look_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_token_shapes_are_masked() -> None:
    text = (
        "key sk-ant-api03-abcdefghij and sk-proj-abcdefghijklmnopqrst, hf_abcdefghijklmnopqrstu, "
        "xoxb-1234567890-abc, ghp_abcdefghijklmnopqrstuvwx, AKIAABCDEFGHIJKLMNOP, "
        "Bearer abc.def-ghijklmn, "
        "password=hunter2hunter2"
    )
    masked = redact_text(text)
    for secret in (
        "abcdefghij",
        "abcdefghijklmnopqrst",
        "hf_abcdefghijklmnopqrstu",
        "xoxb-1234567890",
        "ghp_abc",
        "AKIAABCD",
        "abc.def-ghijklmn",
        "hunter2hunter2",
    ):
        assert secret not in masked
    assert "password=" + MASK in masked


def test_values_of_secret_environment_variables_are_masked_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-value-42")
    assert redact_text("connecting with plain-looking-value-42 now") == f"connecting with {MASK} now"


def test_documents_mask_secret_keys_but_keep_ordinary_ones() -> None:
    document = {
        "max_tokens": 4096,
        "tokenizer": "/models/tok",
        "env": {"HF_TOKEN": "abc123", "CUDA_VISIBLE_DEVICES": "0"},
        "argv": ["--api-key", "sk-abcdefghijklmnopqrstu"],
        "api_key": "",
    }
    assert redact_value(document) == {
        "max_tokens": 4096,
        "tokenizer": "/models/tok",
        "env": {"HF_TOKEN": MASK, "CUDA_VISIBLE_DEVICES": "0"},
        "argv": ["--api-key", MASK],
        "api_key": "",
    }
    expected = {"OPENAI_API_KEY": MASK, "PATH": "/usr/bin"}
    assert redact_env({"OPENAI_API_KEY": "x", "PATH": "/usr/bin"}) == expected


def test_the_working_directory_is_not_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PWD", "/srv/opsloop-checkout")
    monkeypatch.setenv("DB_PWD", "hunter2-but-longer")
    assert redact_text("/srv/opsloop-checkout/.venv/bin/python") == "/srv/opsloop-checkout/.venv/bin/python"
    assert redact_text("login hunter2-but-longer") == f"login {MASK}"


def test_names_that_describe_a_secret_are_not_secret() -> None:
    from tools.redact import is_secret_name, redact_value

    for name in ("token_counts_from", "key_id", "auth_type", "token_usage", "max_key_length"):
        assert not is_secret_name(name), name
    assert redact_value({"token_counts_from": "usage", "HF_TOKEN": "hf_abcdefghijklmnopqrstu"}) == {
        "token_counts_from": "usage",
        "HF_TOKEN": "[REDACTED]",
    }
