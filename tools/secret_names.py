"""Which names say their value is a secret: ``api_key``, ``HF_TOKEN``, ``X-Auth-Token`` do; ``max_tokens``,
``tokenizer``, ``key_line`` do not. A leaf: the redactor and the shapes of secrets both use it."""

from __future__ import annotations

import functools
import re

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
