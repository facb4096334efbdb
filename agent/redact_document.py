"""Redacting a whole JSON document quickly: screen the serialized text, walk it only when needed.

:func:`tools.redact.redact_value` walks every string of a document, which costs tens of
milliseconds for a state with thousands of findings, and the state is saved several times a step.
Almost always nothing in it needs masking (tools redact what they record), so
:func:`redact_json_document` first screens the JSON text: one linear-time pass of the secret shapes
(:func:`tools.secret_shapes.screen`) and cheap substring searches for secret-looking keys; each check
is conservative (it may say "maybe" for text that is clean, never "clean" for text that is not), and
only a "maybe" pays for the exact walk. The result is always what ``redact_value`` would produce.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from tools.redact import MASK, SECRET_WORDS, is_secret_name, known_secret_values, redact_value
from tools.secret_shapes import screen

# Substrings of object keys that may look secret (together they cover every word of SECRET_WORDS).
KEY_ANCHORS = ("key", "token", "secret", "pass", "pwd", "credential", "auth", "cookie", "private", "bearer", "session")
assert all(any(anchor in word for anchor in KEY_ANCHORS) for word in SECRET_WORDS)


def redact_json_document(text: str, indent: int | None = None) -> str:
    """The JSON document ``text`` with secrets masked (as :func:`redact_value` masks them).

    Returned unchanged when screening finds nothing; otherwise parsed, redacted and re-serialized
    (with ``indent``)."""
    if not _may_hold_secrets(text):
        return text
    document: Any = json.loads(text)
    return json.dumps(redact_value(document), indent=indent, ensure_ascii=False)


def _may_hold_secrets(text: str) -> bool:
    if any(form in text for form in _value_forms(known_secret_values())):
        return True
    if screen(json_text=True).search(text.replace(MASK, "") if MASK in text else text):
        return True  # (a masked value is no secret: "token": "[REDACTED]" must not look like one)
    lowered = text.lower()
    if len(lowered) != len(text):  # a character changed length when lower-cased: positions differ
        return True
    for anchor in KEY_ANCHORS:
        position = lowered.find(anchor)
        while position != -1:
            if _in_secret_key(text, position):
                return True
            position = lowered.find(anchor, position + 1)
    return False


def _in_secret_key(text: str, position: int) -> bool:
    """Whether ``position`` lies in an object key that looks secret and holds a non-empty, unmasked
    string (or in text too tangled with escapes to tell)."""
    opening = text.rfind('"', 0, position)
    closing = text.find('"', position)
    if opening == -1 or closing == -1:
        return False
    key = text[opening + 1 : closing]
    if "\\" in key:
        return True
    if not text.startswith('":', closing) or not is_secret_name(key):
        return False
    value = closing + 2
    while text.startswith(" ", value):
        value += 1
    return text.startswith('"', value) and not text.startswith(('""', f'"{MASK}"'), value)


@functools.lru_cache(maxsize=8)
def _value_forms(values: tuple[str, ...]) -> tuple[str, ...]:
    """Each secret value as it appears in JSON text: raw, and escaped when that differs."""
    forms = set(values) | {json.dumps(value, ensure_ascii=False)[1:-1] for value in values}
    forms |= {json.dumps(value)[1:-1] for value in values}
    return tuple(sorted(forms))
