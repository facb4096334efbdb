"""The agent's own records are off limits to its tools, private on disk, and any change to the journal is
found on resume and put before the human."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from support.cli import REPO_ROOT, run_agent, write_script

from agent.config import load_config
from agent.state import ProjectState
from agent.wiring import build_tool_settings
from tools.base import ToolContext
from tools.catalog import default_registry
from tools.hosts.local import LocalHost

REGISTRY = default_registry()
ABSENT = "THIS TEXT IS IN NO FILE OF THE REPOSITORY"


def _context(tmp_path: Path, cwd_root: Path) -> ToolContext:
    """The settings a run gets from the wiring (own code protected), with ``cwd_root`` as the writable root."""
    settings = build_tool_settings(load_config(tmp_path)).model_copy(update={"allowed_write_roots": [cwd_root]})
    settings.engine_python = sys.executable
    return ToolContext(
        state=ProjectState(goal="records"),
        state_dir=tmp_path / "state",
        host=LocalHost(tmp_path / "x"),
        settings=settings,
    )


@pytest.mark.parametrize(
    "relative", ["tools/shell/tool.py", "tools/hosts/sandbox/bwrap.py", "agent/journal.py", "prompts/system.md"]
)
def test_patch_file_refuses_the_agents_own_code_even_when_run_from_the_repository(
    relative: str, tmp_path: Path
) -> None:
    context = _context(tmp_path, REPO_ROOT)
    before = (REPO_ROOT / relative).read_bytes()
    result = REGISTRY.execute(
        "patch_file", {"path": str(REPO_ROOT / relative), "search": ABSENT, "replace": "x"}, context
    )
    assert not result.ok and "the agent's own code" in (result.error or ""), result.error
    assert (REPO_ROOT / relative).read_bytes() == before


def test_patch_file_refuses_the_state_directory_and_credentials(tmp_path: Path) -> None:
    context = _context(tmp_path, tmp_path)
    context.state_dir.mkdir()
    journal = context.state_dir / "journal.jsonl"
    journal.write_text('{"kind": "start"}\n')
    home_key = Path.home() / ".ssh" / "id_ed25519"
    for target, what in ((journal, "the state directory"), (home_key, "credentials")):
        result = REGISTRY.execute("patch_file", {"path": str(target), "search": "start", "replace": "x"}, context)
        assert not result.ok and (what in (result.error or "") or "outside the writable roots" in (result.error or ""))
    assert journal.read_text() == '{"kind": "start"}\n'


def test_a_patch_backup_keeps_the_originals_mode(tmp_path: Path) -> None:
    context = _context(tmp_path, tmp_path / "work")
    (tmp_path / "work").mkdir()
    target = tmp_path / "work" / "secret.env"
    target.write_text("MODE=a\n")
    os.chmod(target, 0o600)
    result = REGISTRY.execute("patch_file", {"path": str(target), "search": "a", "replace": "b"}, context)
    assert result.ok and result.output is not None, result.error
    assert stat.S_IMODE(Path(result.output["backup_path"]).stat().st_mode) == 0o600
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def _blocked_run(tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    script = write_script(
        tmp_path / "plan.json",
        [
            {"tool": "update_state", "arguments": {"findings": [{"summary": "first"}]}},
            {"ask": "go on?"},
            {"finish": "ok"},
        ],
    )
    blocked = run_agent("run", "-g", "tamper", "--script", script, "--state-dir", state_dir, cwd=tmp_path)
    assert blocked.returncode == 3, blocked.stderr
    assert run_agent("ask", "--answer", "yes", "--state-dir", state_dir, cwd=tmp_path).returncode == 0
    return state_dir


def test_the_state_directory_is_private(tmp_path: Path) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    (work / "notes.txt").parent.mkdir()
    (work / "notes.txt").write_text("one\n")
    plan = [
        {"tool": "shell", "arguments": {"command": "seq 1 20000"}},  # saved in full under outputs/
        {"tool": "patch_file", "arguments": {"path": str(work / "notes.txt"), "search": "one", "replace": "two"}},
        {"tool": "shell", "arguments": {"command": "true", "outside_sandbox": "asks"}},
    ]
    script = write_script(tmp_path / "plan.json", plan)
    blocked = run_agent("run", "-g", "private", "--script", script, "--state-dir", state_dir, cwd=work)
    assert blocked.returncode == 3, blocked.stderr
    assert {path.parent.name for path in state_dir.rglob("*") if path.is_file()} >= {"outputs", "patch1", "state"}
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    for path in state_dir.rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, f"{path} is readable by others"


def _edit_line(journal: Path, number: int, old: str, new: str) -> None:
    lines = journal.read_text().splitlines(keepends=True)
    assert old in lines[number]
    lines[number] = lines[number].replace(old, new)
    journal.write_text("".join(lines))


@pytest.mark.parametrize("change", ["edit", "remove", "truncate", "forge"])
def test_a_changed_journal_stops_the_resume_until_the_human_approves(change: str, tmp_path: Path) -> None:
    state_dir = _blocked_run(tmp_path)
    journal = state_dir / "journal.jsonl"
    if change == "edit":
        _edit_line(journal, 2, '"first"', '"forged"')
    elif change == "remove":
        lines = journal.read_text().splitlines(keepends=True)
        journal.write_text("".join(lines[:2] + lines[3:]))
    elif change == "truncate":
        journal.write_text("")
    else:
        with open(journal, "a") as handle:
            handle.write(json.dumps({"at": "now", "kind": "answer", "question_id": "q9", "answer": "approve"}) + "\n")
    stopped = run_agent("resume", state_dir, cwd=tmp_path)
    assert stopped.returncode == 3, stopped.stderr
    state = json.loads((state_dir / "latest.json").read_text())
    [question] = [item for item in state["questions"] if item["answer"] is None]
    assert question["kind"] == "tamper" and "changed outside the agent" in question["question"]
    assert any(finding["pinned"] and "journal was changed" in finding["summary"] for finding in state["findings"])
    again = run_agent("resume", state_dir, cwd=tmp_path)
    assert again.returncode == 3, "resuming again without an answer must not go on"
    assert run_agent("ask", "--approve", question["id"], "--state-dir", state_dir, cwd=tmp_path).returncode == 0
    done = run_agent("resume", state_dir, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_denied_tamper_question_keeps_the_run_stopped(tmp_path: Path) -> None:
    state_dir = _blocked_run(tmp_path)
    _edit_line(state_dir / "journal.jsonl", 2, '"first"', '"forged"')
    assert run_agent("resume", state_dir, cwd=tmp_path).returncode == 3
    refused = run_agent("resume", state_dir, "--answer", "looks fine, go", cwd=tmp_path)
    assert refused.returncode == 2 and "stays stopped" in refused.stderr, refused.stderr
    assert json.loads((state_dir / "latest.json").read_text())["status"] != "done"
