"""Helpers for the runbook tests: run a built-in scenario through the real CLI and clean up after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import psutil

from support.cli import run_agent


def load_state(state_dir: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((state_dir / "latest.json").read_text(encoding="utf-8"))
    return document


def stop_leftovers(state_dir: Path) -> None:
    """Kill every process group the run left behind (a served engine outlives the agent by design)."""
    if not (state_dir / "latest.json").exists():
        return
    for record in load_state(state_dir).get("processes", []):
        try:
            process = psutil.Process(record["pid"])
            if abs(process.create_time() - record["create_time"]) > 1.0:
                continue
            os.killpg(record["pid"], signal.SIGKILL)
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue


def run_scenario(
    scenario: str, goal: str, state_dir: Path, timeout: float = 900.0
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = run_agent(
        "run", "--goal", goal, "--sim", scenario, "--state-dir", state_dir, "--policy", "runbook", timeout=timeout
    )
    return result, load_state(state_dir)


def runbook_progress(state: dict[str, Any]) -> dict[str, Any]:
    progress: dict[str, Any] = state["loop"]["policy_state"]["runbook"]
    return progress
