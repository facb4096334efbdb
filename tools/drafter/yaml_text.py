"""The run config as YAML text (``specforge train --config`` reads YAML or JSON)."""

from __future__ import annotations

import json
from typing import Any


def yaml_scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        # YAML 1.1 (PyYAML) reads '5e-05' as a string; '5.0e-05' is a float.
        return f"{mantissa if '.' in mantissa else mantissa + '.0'}{'e' + exponent if exponent else ''}"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def to_yaml(document: dict[str, Any], indent: int = 0) -> str:
    """Block YAML for nested mappings, lists of scalars and scalars (strings double-quoted)."""
    lines = []
    pad = " " * indent
    for key, value in document.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.append(to_yaml(value, indent + 2).rstrip("\n"))
        elif isinstance(value, list):
            lines.append(f"{pad}{key}:")
            lines.extend(f"{pad}  - {yaml_scalar(item)}" for item in value)
        else:
            lines.append(f"{pad}{key}: {yaml_scalar(value)}")
    return "\n".join(line for line in lines if line) + "\n"
