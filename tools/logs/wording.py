"""Log text as normalised words: what the learned classifier and its word families read.

Identifiers are split (``CUDAGeneratorImpl::current_seed`` gives ``cuda generator impl current
seed``), numbers, paths (their last part is kept), addresses and hexadecimal values are dropped,
common English words are left out (not negations), and plurals, ``-ing``, ``-ed`` and a final ``e`` are
folded so that capture, captured and capturing are one word.
"""

from __future__ import annotations

import re

MESSAGE_CHARS = 600

# URLs, hexadecimal values and addresses (``0x7f..``, ``8cf0``, commit hashes), paths (replaced by their
# last part) and numbers.
_NOT_TEXT = re.compile(
    r"https?://\S+|\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b|\b(?=[0-9a-f]*\d)(?=(?:[0-9]*[a-f]){2})[0-9a-f]{4,7}\b"
    r"|(?:[\w.~-]*/)+(?P<base>[\w.-]*)|\b\d[\d.,:eE+-]*\b"
)
_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z][a-z0-9]*|[A-Z][A-Z0-9]*|[0-9]+[a-z][a-z0-9]*")
_STOP_WORDS = (
    "a an the of to in on at by for from with and or is are was were be been being it its this that these those "
    "as if but so than then there their they we you your our he she his her them which what when where who how "
    "can could should would will may might do does did has have had into over under up down only also any all "
    "some each per via please see py self"
)
_STOP = frozenset(_STOP_WORDS.split())


def _stem(word: str) -> str:
    """Plurals, ``-ing``, ``-ed`` and a final ``e`` folded: capture, captured and capturing are one word."""
    if len(word) <= 3:
        return word
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def words(text: str) -> list[str]:
    """Normalised words of a text, in order (see the module's docstring)."""
    cleaned = _NOT_TEXT.sub(lambda match: f" {match.group('base') or ''} ", text[:MESSAGE_CHARS])
    found = []
    for piece in _PIECES.findall(cleaned):
        word = piece.lower()
        if len(word) < 2 or word in _STOP:
            continue
        found.append(_stem(word))
    return found
