"""Keep secrets out of everything the agent writes: state, journal, logs, notifications.

Three layers: values of environment variables whose *names* look secret (and values registered with
:func:`register_secret`) are replaced wherever they appear; the shapes of secrets (detect-secrets'
detectors, model-provider and Google keys, private-key blocks, passwords and tokens inside URLs: see
:mod:`tools.secret_shapes`) are masked; and in documents, values under secret-looking keys are masked
whole. Every writer calls :func:`redact_text` or :func:`redact_value` on its way to disk or network.

A name looks secret when one of its words (split on punctuation and camelCase) is a secret word:
``api_key``, ``HF_TOKEN``, ``OPENAI_API_KEY``, ``password``, ``X-Auth-Token`` are secret;
``max_tokens``, ``tokenizer``, ``input_tokens``, ``author`` are not.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

from tools.secret_shapes import MASK, mask_shapes, screen

SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "cookie",
        "private",
        "privatekey",
        "secretkey",
        "accesskey",
        "bearer",
        "sessionid",
        "hftoken",
        "apitoken",
        "accesstoken",
        "authtoken",
    }
)

_WORD_BOUNDARY = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

_extra_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value (e.g. read from a config file) so it is masked wherever it appears."""
    if value and len(value) >= 6:
        _extra_secrets.add(value)


# Names built from a secret word that hold no secret (compared in lower case): diagnose_log's
# "key_line" (the most telling log line), and shell variables whose values are plain paths.
NOT_SECRET_NAMES = frozenset({"key_line", "pwd", "oldpwd", "ssh_auth_sock"})
# A secret word next to one of these describes the secret (its count, kind, limit...), it is not one:
# ``token_counts_from``, ``key_id``, ``auth_type`` hold no secret.
NOT_SECRET_QUALIFIERS = frozenset(
    {
        "count",
        "counts",
        "usage",
        "limit",
        "limits",
        "budget",
        "len",
        "length",
        "from",
        "type",
        "kind",
        "id",
        "ids",
        "line",
        "lines",
        "per",
        "rate",
        "used",
        "total",
        "max",
        "min",
        "num",
        "estimate",
        "estimated",
    }
)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a variable or key name looks like it holds a secret (see the module docstring)."""
    if name.lower() in NOT_SECRET_NAMES:
        return False
    words = [word.lower() for word in _WORD_BOUNDARY.split(name) if word]
    if any(word in NOT_SECRET_QUALIFIERS for word in words):
        return False
    return any(word in SECRET_WORDS for word in words)


def known_secret_values() -> tuple[str, ...]:
    """Values to mask wherever they appear: secret-named environment variables and registered secrets."""
    values = {value for name, value in os.environ.items() if len(value) >= 6 and is_secret_name(name)}
    values |= _extra_secrets
    return tuple(sorted(values, key=len, reverse=True))


@functools.lru_cache(maxsize=8)
def _value_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    if not values:
        return None
    return re.compile("|".join(re.escape(value) for value in values))


def redact_text(text: str) -> str:
    """The text with every known secret value and every secret-shaped token replaced by ``MASK``."""
    return _redact_text(text, _value_pattern(known_secret_values()))


def _redact_text(text: str, values: re.Pattern[str] | None) -> str:
    if values is not None:
        text = values.sub(MASK, text)
    return mask_shapes(text) if screen().search(text) else text


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Copy of an environment mapping with secret-named variables masked and values scrubbed."""
    values = _value_pattern(known_secret_values())
    return {name: MASK if is_secret_name(name) else _redact_text(value, values) for name, value in env.items()}


def _masked_whole(key: Any, item: Any) -> bool:
    return isinstance(key, str) and isinstance(item, str) and bool(item) and is_secret_name(key)


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value; values under secret-named keys are masked whole."""
    values = _value_pattern(known_secret_values())

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _redact_text(item, values)
        if isinstance(item, Mapping):
            return {key: MASK if _masked_whole(key, inner) else walk(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [walk(inner) for inner in item]
        return item

    return walk(value)
