"""The digital twin: wall time and steps of the runbook policy on each built-in simulated scenario of one host
(the multi-node ones need their nodes built as network namespaces: ``tests/test_multinode.py``).

Each scenario runs through the real CLI, as a person would start it (``agent run --goal G --sim NAME
--state-dir DIR --policy runbook``), in a fresh state directory. A run ends done (exit 0) or blocked
on a question for a human (exit 3, expected for scenarios that need one, e.g. a GPU fault). Engines
a run leaves serving (they outlive the agent by design) are killed afterwards, by the process group
recorded in that run's state, and only when their start time still matches.

    python -m benchmarks.twin
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import REPO_ROOT, child_environment, emit, machine, note
from twin.loader import builtin_names, load_scenario

GOALS = {"kimi-sm120": "serve kimi with eagle3", "vllm-eagle3": "serve kimi with eagle3"}
DEFAULT_GOAL = "serve the model"
EXIT_MEANINGS = {0: "done", 1: "failed", 2: "usage error", 3: "blocked", 130: "interrupted"}


def stop_leftovers(state: dict[str, Any]) -> int:
    """Kill the process groups of processes the run started that are still alive; returns how many."""
    stopped = 0
    for record in state.get("processes", []):
        try:
            process = psutil.Process(record["pid"])
            if abs(process.create_time() - record["create_time"]) > 1.0:
                continue
            os.killpg(record["pid"], signal.SIGKILL)
            stopped += 1
        except (psutil.Error, ProcessLookupError, PermissionError, KeyError):
            continue
    return stopped


def run_scenario(name: str, directory: Path, timeout: float) -> dict[str, Any]:
    goal = GOALS.get(name, DEFAULT_GOAL)
    state_dir = directory / name
    argv = [
        sys.executable,
        "-m",
        "agent",
        "run",
        "--goal",
        goal,
        "--sim",
        name,
        "--state-dir",
        str(state_dir),
        "--policy",
        "runbook",
    ]
    started = time.perf_counter()
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, env=child_environment(), cwd=REPO_ROOT, timeout=timeout, check=False
        )
        exit_code: int | None = result.returncode
    except subprocess.TimeoutExpired:
        exit_code = None
    wall = time.perf_counter() - started
    latest = state_dir / "latest.json"
    state: dict[str, Any] = json.loads(latest.read_text(encoding="utf-8")) if latest.exists() else {}
    leftovers = stop_leftovers(state)
    pending = [question for question in state.get("questions", []) if question.get("answer") is None]
    return {
        "scenario": name,
        "goal": goal,
        "exit_code": exit_code,
        "outcome": "timed out" if exit_code is None else EXIT_MEANINGS.get(exit_code, "unexpected"),
        "status": state.get("status"),
        "wall_seconds": round(wall, 2),
        "steps": state.get("step"),
        "tool_calls": sum(
            1
            for line in (state_dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()
            if '"kind": "intent"' in line
        )
        if (state_dir / "journal.jsonl").exists()
        else 0,
        "benchmarks_recorded": len(state.get("benchmarks", [])),
        "findings": len(state.get("findings", [])),
        "question_kind": pending[-1].get("kind") if pending else None,
        "question": pending[-1].get("question", "")[:200] if pending else None,
        "engines_left_running": leftovers,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default="", help="Comma-separated names (default: every built-in one-host one)")
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds allowed per scenario")
    options = parser.parse_args(argv)
    single = [name for name in builtin_names() if load_scenario(name)[0].cluster.nodes == 1]  # one simulated host
    names = [name for name in options.scenarios.split(",") if name.strip()] or single
    unknown = sorted(set(names) - set(builtin_names()))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; built-in: {', '.join(builtin_names())}")
    started = time.perf_counter()
    runs = []
    with tempfile.TemporaryDirectory(prefix="opsloop-twin-bench-") as scratch:
        for name in names:
            runs.append(run_scenario(name, Path(scratch), options.timeout))
            note(f"{name}: {runs[-1]['outcome']} after {runs[-1]['steps']} steps, {runs[-1]['wall_seconds']} s")
    emit(
        {
            "benchmark": "twin",
            "policy": "runbook",
            "runs": runs,
            "total_wall_seconds": round(sum(run["wall_seconds"] for run in runs), 1),
            "all_ended": all(run["outcome"] in ("done", "blocked") for run in runs),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
