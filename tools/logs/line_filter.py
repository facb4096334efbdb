"""Line filters for the log tools: a case-insensitive substring, or an RE2 regular expression.

RE2 runs in time linear in the line whatever the pattern, so a pattern from the model (``(a+)+$``) cannot hang
the agent. It is a compiled extension, so it runs on the agent's side only; a remote host's helper filters by
substring alone (:func:`tools.logs.reader.substring_filter`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import re2

from tools.logs.reader import substring_filter


def compile_filter(pattern: str | None, *, regex: bool) -> Callable[[str], bool] | None:
    """A line predicate: case-insensitive substring, or a regular expression when ``regex``. A pattern RE2 does
    not support (back-references, look-arounds) raises ``re.error``."""
    if not pattern:
        return None
    if not regex:
        return substring_filter(pattern)
    options = re2.Options()
    options.log_errors = False
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as error:
        raise re.error(f"{error} (RE2 syntax: no back-references or look-arounds)") from None
    return lambda line: compiled.search(line) is not None
