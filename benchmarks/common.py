"""What every benchmark script shares: the one JSON line it prints, summaries of timings, the machine.

Each script prints exactly one JSON object on stdout (progress goes to stderr), so a result can be
piped into a file or compared by a tool. Timings are reported in milliseconds (``_ms``) or
microseconds (``_us``) as the key says; ratios have no unit.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
# Variables that would change what a child agent does (policy choice, config, keys) are not passed on.
_INFLUENTIAL_PREFIXES = ("OPSLOOP_",)
_INFLUENTIAL = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


def emit(result: dict[str, Any]) -> None:
    """Print the result as one JSON line on stdout."""
    sys.stdout.write(json.dumps(result, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    """A progress line on stderr."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def percentile(values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); ``values`` need not be sorted."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary_ms(seconds: Sequence[float], digits: int = 3) -> dict[str, float | int]:
    """Median, p99, mean and max of durations given in seconds, in milliseconds."""
    if not seconds:
        return {"count": 0}
    return {
        "median_ms": round(percentile(seconds, 0.5) * 1000, digits),
        "p99_ms": round(percentile(seconds, 0.99) * 1000, digits),
        "mean_ms": round(sum(seconds) / len(seconds) * 1000, digits),
        "max_ms": round(max(seconds) * 1000, digits),
        "count": len(seconds),
    }


def ratio(numerator: float | None, denominator: float | None, digits: int = 3) -> float | None:
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, digits)


def machine() -> dict[str, Any]:
    """The machine the figures come from: cores, CPU model, memory, Python."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib: float | None = None
    with contextlib.suppress(ValueError, OSError):
        memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "cpu_cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": memory_gib,
        "python": platform.python_version(),
        "system": platform.system(),
    }


def child_environment(**extra: str) -> dict[str, str]:
    """The environment for a child agent or client: this one without policy/config/keys, repo importable."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in _INFLUENTIAL and not name.startswith(_INFLUENTIAL_PREFIXES)
    }
    environment["PYTHONPATH"] = str(REPO_ROOT)
    environment.update(extra)
    return environment
