"""Prompt texts, kept as Markdown files shipped with the package (``prompts/*.md``).

Read them with :func:`load_prompt`; never inline a prompt in code, so that the words a model sees can be
reviewed and changed on their own.
"""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^[a-z0-9_\-]+$")


class PromptNotFound(LookupError):
    """No prompt file has this name."""


def available_prompts() -> list[str]:
    return sorted(
        entry.name[:-3]
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".md") and entry.is_file()
    )


def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``. Names are plain words (letters, digits, ``_``, ``-``)."""
    if not _NAME.match(name):
        raise PromptNotFound(f"invalid prompt name {name!r}")
    entry = resources.files(__name__).joinpath(f"{name}.md")
    if not entry.is_file():
        raise PromptNotFound(f"no prompt named {name!r}; available: {', '.join(available_prompts())}")
    return entry.read_text(encoding="utf-8")
