"""Drafter quality: the arithmetic that links training, export and the acceptance an engine reports.

Quality is one number, the per-position acceptance ``p`` (the chance the target accepts a draft
token given that the ones before it were accepted). With top-k 1 and ``steps`` draft steps the mean
acceptance length, bonus token included (SGLang ``accept_length``, vLLM mean acceptance length), is
``1 + p + p**2 + ... + p**steps``. Scenario files state acceptance lengths at 3 steps (4 draft tokens).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFERENCE_STEPS = 3
QUALITY_FILE = "sim_quality.json"


def accept_length(per_position: float, steps: int) -> float:
    return 1.0 + sum(per_position**step for step in range(1, max(0, steps) + 1))


def per_position_from_length(length: float, steps: int = REFERENCE_STEPS) -> float:
    """Invert :func:`accept_length` by bisection (it is increasing in ``p`` on [0, 1])."""
    target = min(max(length, 1.0), 1.0 + steps)
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if accept_length(middle, steps) < target:
            low = middle
        else:
            high = middle
    return round((low + high) / 2, 6)


def accept_rate(per_position: float, steps: int) -> float:
    """SGLang ``accept_rate``: accepted draft tokens over drafted ones."""
    if steps <= 0:
        return 0.0
    return (accept_length(per_position, steps) - 1.0) / steps


def write_quality(directory: Path, per_position: float, **details: Any) -> Path:
    document = {
        "per_position_acceptance": per_position,
        "accept_length_at_3_steps": round(accept_length(per_position, REFERENCE_STEPS), 4),
        **details,
    }
    path = directory / QUALITY_FILE
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def read_quality(directory: Path) -> float | None:
    """The per-position acceptance recorded in a drafter directory, or None."""
    try:
        document = json.loads((directory / QUALITY_FILE).read_text(encoding="utf-8"))
        value = float(document["per_position_acceptance"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if 0.0 <= value <= 1.0 else None
