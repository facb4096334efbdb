"""update_state and wait through the registry, as a policy calls them."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.state import ProjectState
from tools.base import ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.local import LocalHost


def _context(tmp_path: Path) -> ToolContext:
    return ToolContext(
        state=ProjectState(goal="g"),
        state_dir=tmp_path,
        host=LocalHost(exit_dir=tmp_path / "x"),
        settings=ToolSettings(engine_python=sys.executable),
    )


def test_tasks_are_upserted_findings_appended_and_next_steps_replaced(tmp_path: Path) -> None:
    context, registry = _context(tmp_path), default_registry()
    tasks = [{"id": "t1", "title": "probe"}, {"id": "t2", "title": "launch"}]
    first = registry.execute(
        "update_state",
        {
            "tasks": tasks,
            "findings": [{"summary": "8 GPUs", "evidence": ["nvidia-smi"]}],
            "next_steps": ["launch", "bench"],
        },
        context,
    )
    assert first.ok and first.output == {
        "tasks": ["t1", "t2"],
        "findings_recorded": 1,
        "open_tasks": 2,
        "next_steps": ["launch", "bench"],
    }
    second = registry.execute(
        "update_state", {"tasks": [{"id": "t1", "status": "done", "notes": "ok"}], "next_steps": []}, context
    )
    assert second.ok
    state = context.state
    assert [(task.id, task.status, task.notes) for task in state.tasks] == [("t1", "done", "ok"), ("t2", "pending", "")]
    assert state.findings[0].evidence == ["nvidia-smi"] and state.next_steps == []


def test_bad_arguments_come_back_as_error_results(tmp_path: Path) -> None:
    context, registry = _context(tmp_path), default_registry()
    empty = registry.execute("update_state", {}, context)
    assert not empty.ok and "at least one of tasks, findings or next_steps" in (empty.error or "")
    wrong = registry.execute("update_state", {"tasks": [{"id": "t1", "status": "finished"}]}, context)
    assert not wrong.ok and "tasks.0.status" in (wrong.error or "")
    assert context.state.tasks == []


def test_wait_waits_and_refuses_silly_durations(tmp_path: Path) -> None:
    context, registry = _context(tmp_path), default_registry()
    lines: list[str] = []
    context.progress = lines.append
    waited = registry.execute("wait", {"seconds": 0.05, "reason": "engine loading"}, context)
    assert waited.ok and (waited.output or {})["waited_seconds"] >= 0.05
    assert lines == ["waiting 0.05 s for engine loading"]
    assert not registry.execute("wait", {"seconds": 3600}, context).ok
    assert not registry.execute("wait", {"seconds": -1}, context).ok
