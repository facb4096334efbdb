"""Keep secrets out of everything the agent writes: state, journal, logs, notifications.

Two layers: values of environment variables whose *names* look secret are replaced wherever they
appear, and well-known token shapes (OpenAI, Anthropic, Hugging Face, Slack, GitHub, bearer tokens,
``KEY=value`` pairs) are masked by pattern. Every writer calls :func:`redact_text` or
:func:`redact_value` on its way to disk or network.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

MASK = "[REDACTED]"

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|PRIVATE)", re.IGNORECASE)

SECRET_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"hf_[A-Za-z0-9]{16,}"),
    re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{12,}"),
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&]{6,}"),
]

_extra_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value (e.g. read from a config file) so it is masked wherever it appears."""
    if value and len(value) >= 6:
        _extra_secrets.add(value)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def _known_secret_values() -> list[str]:
    values = {value for name, value in os.environ.items() if is_secret_name(name) and len(value) >= 6}
    values |= _extra_secrets
    return sorted(values, key=len, reverse=True)


def redact_text(text: str) -> str:
    for value in _known_secret_values():
        if value in text:
            text = text.replace(value, MASK)
    for pattern in SECRET_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda match: match.group(1) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Copy of an environment mapping with secret-named variables masked and values scrubbed."""
    return {name: MASK if is_secret_name(name) else redact_text(value) for name, value in env.items()}


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value; secret-named keys are masked whole."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {key: MASK if isinstance(key, str) and is_secret_name(key) and isinstance(item, str) and item
                else redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value
