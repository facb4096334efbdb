"""The fast document redactor must always agree with the exact walk (redact_value)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.redact_document import redact_json_document
from tools.redact import MASK, redact_value, register_secret

REGISTERED = 'plain-registered-value-42 \u00e9"quoted"'  # as a config file's password might be
register_secret(REGISTERED)

PLANTED = [
    "sk-ant-api03-abcdefghijkl",
    "sk-proj-abcdefghijklmnopqrst",
    "hf_abcdefghijklmnopqrstu",
    "xoxb-123456789012-abc",
    "ghp_abcdefghijklmnopqrstuvwx",
    "AKIAABCDEFGHIJKLMNOP",
    "Bearer abcdefghijklmnop",
    "Bearer\tabcdefghijklmnop",
    "api_key=hunter2hunter2",
    "token\t=abcdefgh",
    'password: "opensesame"',
    "harmless",
    "max_tokens=4096",
    "tokenizer",
    "İstanbul token=abcdefgh",
    REGISTERED,
    f"prefix {REGISTERED} suffix",
]
KEYS = [
    "api_key",
    "HF_TOKEN",
    "password_file",
    "apiKey",
    "max_tokens",
    "tokenizer",
    "summary",
    "key_line",
    "evidence",
    "X-Auth-Token",
    "env",
    "note",
]

text = st.one_of(
    st.sampled_from(PLANTED),
    st.text(max_size=20),
    st.builds(lambda a, b, c: f"{a} {b}\n{c}", st.text(max_size=8), st.sampled_from(PLANTED), st.text(max_size=8)),
)
documents: st.SearchStrategy[Any] = st.recursive(
    st.one_of(text, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=12,
)


def _fast(document: Any, indent: int | None) -> Any:
    return json.loads(redact_json_document(json.dumps(document, ensure_ascii=False, indent=indent), indent=indent))


@settings(max_examples=200, deadline=None)
@given(documents, st.sampled_from([None, 1]))
def test_screening_never_lets_a_secret_through(document: Any, indent: int | None) -> None:
    assert _fast(document, indent) == redact_value(document)


@pytest.mark.parametrize(
    "document",
    [
        {"findings": [{"summary": "clean", "evidence": ["INFO ok"]}], "usage": {"input_tokens": 3}},
        {"env": {"HF_TOKEN": MASK, "CUDA_VISIBLE_DEVICES": "0"}, "api_key": ""},
    ],
)
def test_clean_documents_come_back_as_the_same_text(document: dict[str, Any]) -> None:
    serialized = json.dumps(document, indent=1)
    assert redact_json_document(serialized, indent=1) is serialized


def test_a_secret_under_a_secret_key_is_masked() -> None:
    masked = json.loads(redact_json_document(json.dumps({"deploy": {"password_file": "/etc/pw-123456"}})))
    assert masked == {"deploy": {"password_file": MASK}}
