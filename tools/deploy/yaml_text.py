"""Block-style YAML for plain data (mappings, lists, strings, numbers, booleans, None): what a person reads and
what YAML parsers (SkyPilot's, kubectl's) load back to the same data. Multi-line strings become ``|`` blocks;
other strings are quoted as JSON strings, which YAML reads the same way."""

from __future__ import annotations

import json
from typing import Any


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value))


def _value_lines(value: Any, indent: int) -> list[str]:
    """The lines that follow ``key:`` (or ``-``) for a nested value; empty for a scalar on the same line."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        return dump_lines(value, indent)
    if isinstance(value, list) and value:
        lines: list[str] = []
        for item in value:
            nested = _value_lines(item, indent + 2)
            if isinstance(item, dict) and item:
                first, *rest = nested
                lines.append(f"{pad}- {first.lstrip()}")
                lines += rest
            elif nested:
                lines.append(f"{pad}- {_block(item)}" if isinstance(item, str) else f"{pad}-")
                lines += nested
            else:
                lines.append(f"{pad}- {_inline(item, indent + 2)}")
        return lines
    if isinstance(value, str) and "\n" in value:
        return [f"{pad}{line}" if line else "" for line in value.rstrip("\n").split("\n")]
    return []


def _inline(value: Any, indent: int) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    if isinstance(value, str) and "\n" in value:
        return _block(value)
    return scalar(value)


def _block(text: str) -> str:
    """The block indicator that keeps the string's end: one final newline (``|``) or none (``|-``)."""
    return "|" if text.endswith("\n") else "|-"


def dump_lines(document: dict[str, Any], indent: int = 0) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for key, value in document.items():
        nested = _value_lines(value, indent + 2)
        if nested and not isinstance(value, str):
            lines.append(f"{pad}{key}:")
        else:
            lines.append(f"{pad}{key}: {_inline(value, indent + 2)}")
        lines += nested
    return lines


def dump(document: dict[str, Any]) -> str:
    return "\n".join(dump_lines(document)) + "\n"
