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

from tools.secret_names import SECRET_WORDS as SECRET_WORDS
from tools.secret_names import is_secret_name as is_secret_name
from tools.secret_shapes import MASK as MASK
from tools.secret_shapes import mask_shapes, screen

_extra_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value (e.g. read from a config file) so it is masked wherever it appears."""
    if value and len(value) >= 6:
        _extra_secrets.add(value)


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
