"""Redacting a whole JSON document quickly: screen the serialized text, walk it only when needed.

:func:`tools.redact.redact_value` walks every string of a document, which costs tens of
milliseconds for a state with thousands of findings, and the state is saved several times a step.
Almost always nothing in it needs masking (tools redact what they record), so
:func:`redact_json_document` first screens the JSON text with cheap substring searches; each check
is conservative (it may say "maybe" for text that is clean, never "clean" for text that is not), and
only a "maybe" pays for the exact walk. The result is always what ``redact_value`` would produce.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from tools.redact import MASK, SECRET_WORDS, is_secret_name, known_secret_values, redact_value

# Whitespace as it appears inside JSON strings: raw, or escaped as \t \n \r.
_SPACE = r"(?:\s|\\[tnr])"
_ASSIGNED = (
    rf"(?:api[_-]?key|token|secret|password|passwd)[\"'\\]*{_SPACE}*[:=]{_SPACE}*[\"'\\]*"
    r"(?!\[redacted\])[^\s\"',;&]{6}"
)

# Substrings to look for in the lower-cased text, each with the probe (a superset of a pattern of
# tools.redact) tried where it occurs, and whether it may be part of a secret-looking key. Together
# the key anchors cover every word of SECRET_WORDS.
_ANCHORS: list[tuple[str, re.Pattern[str] | None, bool]] = [
    (anchor, re.compile(probe) if probe else None, key)
    for anchor, probe, key in (
        ("sk-", r"sk-[a-z0-9_\-]{8}", False),
        ("hf_", r"hf_[a-z0-9]{16}", False),
        ("xox", r"xox[abposr]-[a-z0-9\-]{10}", False),
        ("gh", r"gh[pousr]_[a-z0-9]{20}", False),
        ("akia", r"akia[0-9a-z]{16}", False),
        ("bearer", rf"bearer{_SPACE}+[a-z0-9._\-]{{12}}", True),
        ("api", _ASSIGNED, False),
        ("token", _ASSIGNED, True),
        ("secret", _ASSIGNED, True),
        ("pass", _ASSIGNED, True),
        ("key", None, True),
        ("pwd", None, True),
        ("credential", None, True),
        ("auth", None, True),
        ("cookie", None, True),
        ("private", None, True),
        ("sessionid", None, True),
    )
]
assert all(any(anchor in word for anchor, _, key in _ANCHORS if key) for word in SECRET_WORDS)


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
    lowered = text.lower()
    if len(lowered) != len(text):  # a character changed length when lower-cased: positions differ
        return True
    for anchor, probe, key in _ANCHORS:
        position = lowered.find(anchor)
        while position != -1:
            if (probe is not None and probe.match(lowered, position)) or (key and _in_secret_key(text, position)):
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
