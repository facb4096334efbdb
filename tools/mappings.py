"""Deep merge of nested mappings: the configuration layers and the drafter's extra config use it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge of two nested mappings; values from ``top`` win, tables merge key by key."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged
