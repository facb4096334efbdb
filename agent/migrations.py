"""Reading state documents written by earlier versions of opsloop.

Each step takes a document of one schema version to the next, as plain JSON, before validation.
Version 1 -> 2: the document became a hand-over of fixed size (:mod:`agent.history`): findings are
numbered (the history counts them), ``environment.simulated_scenario`` is gone (``run`` holds the
scenario), and durations are spelled ``_seconds`` (a benchmark level's ``duration_s``). Entries beyond
the caps move to the journal at the first save.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Document = dict[str, Any]


def _from_version_1(document: Document) -> Document:
    migrated = dict(document)
    environment = dict(migrated.get("environment") or {})
    scenario = environment.pop("simulated_scenario", None)
    migrated["environment"] = environment
    run = dict(migrated.get("run") or {})
    if scenario and not run.get("simulated_scenario"):
        run["simulated_scenario"] = scenario
    migrated["run"] = run
    findings = [dict(item) if isinstance(item, dict) else item for item in migrated.get("findings") or []]
    for number, finding in enumerate(findings, start=1):
        if isinstance(finding, dict):
            finding.setdefault("number", number)
    migrated["findings"] = findings
    migrated["benchmarks"] = [_seconds_spelling(record) for record in migrated.get("benchmarks") or []]
    migrated["history"] = {"findings_recorded": len(findings)}
    migrated["schema_version"] = 2
    return migrated


def _seconds_spelling(record: Any) -> Any:
    metrics = record.get("metrics") if isinstance(record, dict) else None
    if not isinstance(metrics, dict) or not isinstance(metrics.get("levels"), list):
        return record
    levels = [
        {("duration_seconds" if key == "duration_s" else key): value for key, value in level.items()}
        if isinstance(level, dict)
        else level
        for level in metrics["levels"]
    ]
    return {**record, "metrics": {**metrics, "levels": levels}}


STEPS: dict[int, Callable[[Document], Document]] = {1: _from_version_1}


def migrate(document: Document, target: int) -> Document:
    """``document`` brought up to schema version ``target`` (unchanged when it is there already)."""
    version = document.get("schema_version", 1)
    while isinstance(version, int) and version < target and version in STEPS:
        document = STEPS[version](document)
        version = document["schema_version"]
    return document
