"""Regression tests for the bugs the reliability suite found (see docs/reliability.md, "Bugs found").

Each test reproduces the failure deterministically through the same boundary the suite met it at.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import kill_state_processes
from spine_helpers import journal_records, run_agent


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "state"
    yield directory
    kill_state_processes(directory)


def test_answering_a_budget_question_does_not_relaunch_a_verified_engine(state_dir: Path) -> None:
    """Found by the kill-and-resume chain: an answer to the loop's budget question ("extend 4") made the
    runbook relaunch the engine when the budget ran out in its benchmark phase, so every extension was
    spent on a stop, a launch and a correctness check, and the run never reached done."""
    blocked = run_agent("run", "--goal", "serve the model", "--sim", "h100-healthy", "--policy", "runbook",
                        "--max-steps", "4", "--state-dir", state_dir, timeout=120)
    assert blocked.returncode == 3, blocked.stderr[-2000:]
    before = json.loads((state_dir / "latest.json").read_text())
    assert before["loop"]["policy_state"]["runbook"]["phase"] == "bench"
    assert [question["kind"] for question in before["questions"]] == ["limit"]

    resumed = run_agent("resume", state_dir / "latest.json", "--answer", "extend 100", timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = json.loads((state_dir / "latest.json").read_text())
    launches = [entry for entry in journal_records(state_dir)
                if entry.get("kind") == "intent" and entry.get("tool") == "launch_engine"]
    assert len(launches) == 1, "the engine was launched again after the budget answer"
    assert [attempt["process"] for attempt in after["loop"]["policy_state"]["runbook"]["attempts"]] == ["engine-1"]
    assert [record["label"] for record in after["benchmarks"]] == ["baseline single-stream", "baseline peak"]
