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
# Pieces of identifiers: "CUDAGeneratorImpl" gives CUDA, Generator, Impl; words that start with a digit
# (sizes such as 7b or 30B) are left out.
_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z][a-z0-9]*|[A-Z][A-Z0-9]*")
_STOP_WORDS = (
    "a an the of to in on at by for from with and or is are was were be been being it its this that these those "
    "as if but so than then there their they we you your our he she his her them which what when where who how "
    "can could should would will may might do does did has have had into over under up down only also any all "
    "some each per via please see py self"
)
# Names of model families and their size and variant tags say which model a log ran, not what failed.
_MODEL_WORDS = (
    "llama qwen qwen2 qwen3 deepseek mistral mixtral gemma gemma2 gemma3 phi phi3 glm glm4 kimi minimax baichuan "
    "falcon opt gpt oss olmo olmocr intern internlm yi instruct chat base hf omni vl vision coder"
)
_STOP = frozenset(_STOP_WORDS.split()) | frozenset(_MODEL_WORDS.split())
_FILE_NAME = re.compile(r"\.[A-Za-z][\w]*$")


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


def _keep_file_name(match: re.Match[str]) -> str:
    """A path's last part when it names a file (``tokenizer.json``); a folder (a model's) says nothing."""
    base = match.group("base") or ""
    return f" {base} " if _FILE_NAME.search(base) else " "


def words(text: str) -> list[str]:
    """Normalised words of a text, in order (see the module's docstring)."""
    cleaned = _NOT_TEXT.sub(_keep_file_name, text[:MESSAGE_CHARS])
    found = []
    for piece in _PIECES.findall(cleaned):
        word = piece.lower()
        if len(word) < 2 or word in _STOP:
            continue
        found.append(_stem(word))
    return found
