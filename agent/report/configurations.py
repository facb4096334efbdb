"""The figures a report compares: benchmark levels grouped by configuration, and launch changes.

A configuration is named by its speculative decoding: ``baseline`` without it, else the algorithm and
the drafter (the draft model directory's name, or its parent's for an exported drafter such as
``drafter-4/export-sglang``). A benchmark without an engine configuration (a server measured by URL
alone) is named by its label. Within a configuration, the latest measurement at a concurrency wins.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, ValidationError

from agent.report.records import LaunchAttempt
from tools.bench.runner import LevelReport
from tools.records import BenchmarkRecord

BASELINE = "baseline"


class Point(BaseModel):
    """One measured level of one configuration."""

    configuration: str
    benchmark: str  # the record's id
    level: LevelReport


def configuration_name(record: BenchmarkRecord) -> str:
    if not record.engine_config:
        return record.label
    speculative = record.engine_config.get("speculative")
    if not isinstance(speculative, dict) or not speculative:
        return BASELINE
    parts = PurePath(str(speculative.get("draft_model_path") or "")).parts
    drafter = parts[-1] if parts else "drafter"
    if drafter.startswith("export") and len(parts) > 1:
        drafter = parts[-2]
    return f"{speculative.get('algorithm') or 'speculative'} {drafter}"


def points(benchmarks: list[BenchmarkRecord]) -> list[Point]:
    """Every level, latest first wins per (configuration, concurrency); ordered by configuration as first
    measured, then by concurrency."""
    chosen: dict[tuple[str, int], Point] = {}
    order: list[str] = []
    for record in benchmarks:
        name = configuration_name(record)
        if name not in order:
            order.append(name)
        for raw in record.metrics.get("levels") or []:
            try:
                level = LevelReport.model_validate(raw)
            except ValidationError:
                continue
            if level.completed:
                chosen[(name, level.concurrency)] = Point(configuration=name, benchmark=record.id, level=level)
    return sorted(chosen.values(), key=lambda point: (order.index(point.configuration), point.level.concurrency))


def by_configuration(measured: list[Point]) -> dict[str, list[Point]]:
    grouped: dict[str, list[Point]] = {}
    for point in measured:
        grouped.setdefault(point.configuration, []).append(point)
    return grouped


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def change(before: dict[str, Any] | None, after: dict[str, Any]) -> str:
    """What ``after`` changed from ``before``, as ``key=value`` items (``key unset`` when removed)."""
    if before is None:
        return "first launch"
    old, new = _flat(before), _flat(after)
    items = [f"{key}={new[key]}" for key in new if old.get(key) != new[key]]
    items += [f"{key} unset" for key in old if key not in new]
    # A new port alone is a remedy (the old one was taken); beside other changes it is only where it serves.
    telling = [item for item in items if not item.startswith("port=")]
    return ", ".join(telling or items) or "same configuration"


def changes(launches: list[LaunchAttempt]) -> list[str]:
    """For each attempt, what changed from the one before."""
    return [change(launches[index - 1].config if index else None, item.config) for index, item in enumerate(launches)]


def kept(launches: list[LaunchAttempt], benchmarks: list[BenchmarkRecord]) -> dict[str, Any] | None:
    """The configuration the run ended with: the last launch that became ready, else the last benchmarked."""
    for attempt in reversed(launches):
        if attempt.outcome == "ready":
            return attempt.config
    return benchmarks[-1].engine_config if benchmarks else None
