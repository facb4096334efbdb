"""Kill a real ``agent run`` mid-step and resume it: nothing lost, nothing done twice.

Also: two agents on one state directory (exactly one runs), and SIGTERM (saved, resumable).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from support.cli import journal_records, run_agent, start_agent, wait_for, write_script


def _finding(summary: str) -> dict[str, Any]:
    return {"tool": "update_state", "arguments": {"findings": [{"summary": summary}]}}


def _plan(tmp_path: Path, wait_seconds: float = 30.0) -> Path:
    return write_script(
        tmp_path / "plan.json",
        [
            {"tool": "update_state", "arguments": {"tasks": [{"id": "t1", "title": "before"}]}},
            _finding("f1"),
            {"tool": "wait", "arguments": {"seconds": wait_seconds, "reason": "a slow step"}},
            _finding("f2"),
            {"finish": "all steps played"},
        ],
    )


def _intent_of(state_dir: Path, tool: str) -> bool:
    return any(entry.get("kind") == "intent" and entry.get("tool") == tool for entry in journal_records(state_dir))


def test_sigkill_mid_step_then_resume_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    agent = start_agent("run", "-g", "crash me", "--script", _plan(tmp_path), "--state-dir", state_dir)
    try:
        assert wait_for(lambda: _intent_of(state_dir, "wait")), "the agent never reached the slow step"
        agent.send_signal(signal.SIGKILL)
        agent.wait(timeout=10)
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.communicate()
    assert agent.returncode == -signal.SIGKILL
    killed = json.loads((state_dir / "latest.json").read_text())
    assert killed["status"] == "running" and killed["loop"]["pending"]["step"] == 2

    resumed = run_agent("resume", state_dir / "latest.json")
    assert resumed.returncode == 0, resumed.stderr
    assert "interrupted" in resumed.stderr

    state = json.loads((state_dir / "latest.json").read_text())
    assert state["status"] == "done" and state["summary"] == "all steps played"
    assert [task["id"] for task in state["tasks"]] == ["t1"]
    assert [finding["summary"] for finding in state["findings"]] == ["f1", "f2"]
    records = journal_records(state_dir)
    intents = [entry["call_id"] for entry in records if entry["kind"] == "intent"]
    assert len(intents) == len(set(intents)) == 4, "no call was started twice"
    results = {entry["call_id"]: entry for entry in records if entry["kind"] == "result"}
    assert set(results) == set(intents), "every started call has exactly one result"
    wait_call = next(entry["call_id"] for entry in records if entry["kind"] == "intent" and entry["tool"] == "wait")
    assert results[wait_call]["interrupted"] and results[wait_call]["recovered"]
    assert [entry["resumed"] for entry in records if entry["kind"] == "start"] == [False, True]


def test_two_agents_on_one_state_directory_exactly_one_runs(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    first = start_agent(
        "run", "-g", "first", "--script", _plan(tmp_path, wait_seconds=600), "--state-dir", state_dir
    )  # held until the test ends it: the other commands must meet it running, however slow they start
    try:
        assert wait_for(lambda: _intent_of(state_dir, "wait"))
        for command in (
            ["run", "-g", "second", "--script", tmp_path / "plan.json", "--new"],
            ["resume"],
            ["ask", "--answer", "x"],
        ):
            second = run_agent(*command, "--state-dir", state_dir)
            assert second.returncode == 2, second.stderr
            assert f"in use by a running agent (PID {first.pid})" in second.stderr
        status = run_agent("status", state_dir)  # reading needs no lock
        assert f"agent PID {first.pid} is running it now" in status.stdout
        first.send_signal(signal.SIGTERM)
    finally:
        first.communicate(timeout=30)
    assert first.returncode == 130
    assert json.loads((state_dir / "latest.json").read_text())["goal"] == "first"
    assert [entry["goal"] for entry in journal_records(state_dir) if entry["kind"] == "start"] == ["first"]


def test_sigterm_saves_the_state_and_the_run_resumes(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    agent = start_agent("run", "-g", "stop me", "--script", _plan(tmp_path), "--state-dir", state_dir)
    try:
        assert wait_for(lambda: _intent_of(state_dir, "wait"))
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=20)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    assert agent.returncode == 130 and "agent resume" in stderr
    assert any(entry.get("event") == "interrupted" for entry in journal_records(state_dir))
    assert run_agent("resume", state_dir).returncode == 0
