"""patch_file outside the writable roots: a question with the diff, an approval of exactly that change applied
once, and the agent's own records, code and configuration refused without a question; through a run's loop
(`agent ask --approve`, `agent resume`) and through `agent mcp` (elicitation, or a refusal naming the question)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from support.cli import REPO_ROOT, agent_environment, journal_records, run_agent, write_script
from support.mcp_client import APPROVE, DENY, Answers, stdio_client_for, structured, text_of

from agent.actions import Ask
from agent.config import load_config
from agent.escalation import answer_question, record_question
from agent.state import ProjectState
from agent.wiring import build_tool_settings
from tools.base import APPROVAL_WORD, NeedsApproval, ToolContext
from tools.catalog import default_registry
from tools.hosts.local import LocalHost

REGISTRY = default_registry()
ORIGINAL = "max_batch = 8\nport = 30000\n"
EDIT = {"search": "max_batch = 8", "replace": "max_batch = 4", "reason": "halve the batch"}


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    """A run's tool settings (own code protected, the configuration file hidden), ``work`` the only root."""
    (tmp_path / "work").mkdir()
    (tmp_path / "state").mkdir()
    settings = build_tool_settings(load_config(tmp_path), config_file=tmp_path / "agent.toml")
    settings = settings.model_copy(update={"allowed_write_roots": [tmp_path / "work"], "engine_python": sys.executable})
    return ToolContext(
        state=ProjectState(goal="edits"), state_dir=tmp_path / "state", host=LocalHost(), settings=settings
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "etc" / "engine.conf"
    path.parent.mkdir()
    path.write_text(ORIGINAL)
    return path


def _asked(context: ToolContext, arguments: dict[str, Any]) -> NeedsApproval:
    with pytest.raises(NeedsApproval) as asked:
        REGISTRY.execute("patch_file", arguments, context)
    return asked.value


def _answer(context: ToolContext, request: NeedsApproval, answer: str) -> str:
    state = context.state
    assert isinstance(state, ProjectState)
    ask = Ask(question=request.reason, evidence=request.evidence, question_kind="approval", approval_word=APPROVAL_WORD)
    question = record_question(state, ask)
    answer_question(state, answer, question.id)
    return question.id


def test_an_approved_patch_outside_the_roots_applies_once_and_reverts(context: ToolContext, outside: Path) -> None:
    arguments = {"path": str(outside), **EDIT}
    request = _asked(context, arguments)
    assert request.evidence[0].startswith(f"patch: {outside} (change sha256:")
    assert f"outside: {outside} is in none of the writable roots" in request.evidence[1]
    assert "reason: halve the batch" in request.evidence and "-max_batch = 8" in request.evidence
    assert outside.read_text() == ORIGINAL and not (context.state_dir / "patches").exists()
    # An approval admits exactly that change: a different edit of the same file asks anew.
    question_id = _answer(context, request, "approve")
    other = _asked(context, {"path": str(outside), "search": "port = 30000", "replace": "port = 1"})
    assert other.evidence[0] != request.evidence[0]
    assert other.reason != request.reason, "each change is a question of its own, never one's evidence swapped"
    applied = REGISTRY.execute("patch_file", arguments, context)
    assert applied.ok and applied.output is not None, applied.error
    assert applied.output["approved_by_question"] == question_id
    assert outside.read_text() == ORIGINAL.replace("8", "4")
    assert context.state.patches[0].approved_by_question == question_id
    # Used once: the same change on the same file asks again.
    outside.write_text(ORIGINAL)
    assert _asked(context, arguments).evidence[0] == request.evidence[0]
    outside.write_text(ORIGINAL.replace("8", "4"))
    reverted = REGISTRY.execute("revert_patch", {"patch_id": "patch1"}, context)
    assert reverted.ok, reverted.error
    assert outside.read_text() == ORIGINAL


def test_a_denied_patch_leaves_the_file_untouched_and_asks_again(context: ToolContext, outside: Path) -> None:
    arguments = {"path": str(outside), **EDIT}
    _answer(context, _asked(context, arguments), "no, that file belongs to the distribution")
    again = _asked(context, arguments)
    assert again.reason.startswith(f"patching {outside} needs approval")
    assert outside.read_text() == ORIGINAL and context.state.patches == []


def test_the_agents_records_code_and_configuration_are_refused_without_a_question(
    context: ToolContext, tmp_path: Path
) -> None:
    places = {
        context.state_dir / "journal.jsonl": "the state directory",
        context.state_dir / "secrets.json": "the state directory",
        tmp_path / "agent.toml": "the agent's configuration",
    }
    for path in places:
        path.write_text(ORIGINAL)
    places[REPO_ROOT / "tools" / "patch" / "outside.py"] = "the agent's own code"
    for path, what in places.items():
        before = path.read_bytes()
        result = REGISTRY.execute("patch_file", {"path": str(path), "search": "max_batch", "replace": "x"}, context)
        assert not result.ok and what in (result.error or ""), result.error
        assert path.read_bytes() == before
    assert context.state.questions == []


def test_the_users_credentials_are_refused_without_a_question(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".ssh").mkdir(parents=True)
    work.mkdir()
    key = home / ".ssh" / "config"
    key.write_text("Host a\n  User root\n")
    arguments = json.dumps({"path": str(key), "search": "root", "replace": "nobody"})
    environment = agent_environment(HOME=str(home))
    result = run_agent(
        "tool", "patch_file", "--args", arguments, "--state-dir", tmp_path / "state", cwd=work, environment=environment
    )
    assert result.returncode != 0 and "the user's credentials" in result.stdout + result.stderr
    assert key.read_text() == "Host a\n  User root\n"
    assert json.loads((tmp_path / "state" / "latest.json").read_text())["questions"] == []


def test_links_fifos_and_missing_files_outside_are_refused_not_asked(context: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "engine.conf").write_text(ORIGINAL)
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    os.mkfifo(tmp_path / "pipe")
    cases = {
        tmp_path / "linked" / "engine.conf": "symbolic link",
        tmp_path / "pipe": "not a regular file",
        tmp_path / "missing.conf": "does not exist",
    }
    for path, why in cases.items():
        result = REGISTRY.execute("patch_file", {"path": str(path), **EDIT}, context)
        assert not result.ok and "outside the writable roots" in (result.error or "") and why in (result.error or "")
    assert (tmp_path / "real" / "engine.conf").read_text() == ORIGINAL


def _question(state_dir: Path, status: str = "pending") -> dict[str, Any]:
    questions = json.loads((state_dir / "latest.json").read_text())["questions"]
    return [item for item in questions if (item["answer"] is None) == (status == "pending")][-1]


def test_through_a_run_a_denial_keeps_the_file_and_an_approval_applies_it_once(tmp_path: Path, outside: Path) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    call = {"tool": "patch_file", "arguments": {"path": str(outside), **EDIT}}
    script = write_script(tmp_path / "plan.json", [call] * 3 + [{"finish": "patched"}])
    blocked = run_agent("run", "-g", "edit", "--script", script, "--state-dir", state_dir, cwd=work)
    assert blocked.returncode == 3, blocked.stderr
    first = _question(state_dir)
    assert first["kind"] == "approval" and any(line.startswith(f"patch: {outside}") for line in first["evidence"])
    assert run_agent("ask", "--deny", first["id"], "--state-dir", state_dir, cwd=work).returncode == 0
    again = run_agent("resume", state_dir, cwd=work)
    assert again.returncode == 3 and outside.read_text() == ORIGINAL, again.stderr
    second = _question(state_dir)
    assert second["id"] != first["id"]
    assert run_agent("ask", "--approve", second["id"], "--state-dir", state_dir, cwd=work).returncode == 0
    done = run_agent("resume", state_dir, cwd=work)
    assert done.returncode == 0, done.stderr
    assert outside.read_text() == ORIGINAL.replace("8", "4")
    results = [entry["result"] for entry in journal_records(state_dir) if entry["kind"] == "result"]
    # asked, asked again after the denial, applied once
    assert [result["ok"] for result in results] == [False, False, True]
    patches = json.loads((state_dir / "latest.json").read_text())["patches"]
    assert [patch["approved_by_question"] for patch in patches] == [second["id"]]


def _patch_over_mcp(
    state_dir: Path, errlog: IO[str], target: Path, answers: Answers | None, mode: str = "legacy"
) -> Any:
    """One patch_file call from the SDK's client; ``legacy``: the handshake protocol (elicitation during the
    call), ``auto``: the newest (the form inside an ``input_required`` result, answered on the repeated call)."""

    async def session() -> Any:
        async with stdio_client_for(state_dir, errlog=errlog, elicitation=answers, mode=mode) as client:
            return await client.call_tool("patch_file", {"path": str(target), **EDIT})

    return anyio.run(session)


@pytest.fixture
def errlog(tmp_path: Path) -> Any:
    with (tmp_path / "server-stderr.log").open("w") as handle:
        yield handle


def test_over_mcp_an_accepted_form_applies_the_patch_once(tmp_path: Path, outside: Path, errlog: IO[str]) -> None:
    answers = Answers(APPROVE)
    output = structured(_patch_over_mcp(tmp_path / "state", errlog, outside, answers))
    assert output["approved_by_question"] == "q1" and outside.read_text() == ORIGINAL.replace("8", "4")
    assert len(answers.asked) == 1 and f"patch: {outside}" in answers.asked[0] and "-max_batch = 8" in answers.asked[0]
    assert _question(tmp_path / "state", "answered")["answer"] == "approve"


def test_over_mcp_a_denial_refuses_with_the_reason(tmp_path: Path, outside: Path, errlog: IO[str]) -> None:
    answers = Answers(DENY)
    result = _patch_over_mcp(tmp_path / "state", errlog, outside, answers, mode="auto")
    assert (
        result.is_error and "the user denied it" in text_of(result) and "outside the writable roots" in text_of(result)
    )
    assert outside.read_text() == ORIGINAL and len(answers.asked) == 1


def test_over_mcp_without_elicitation_the_refusal_names_the_question(
    tmp_path: Path, outside: Path, errlog: IO[str]
) -> None:
    result = _patch_over_mcp(tmp_path / "state", errlog, outside, None)
    text = text_of(result)
    assert result.is_error and "cannot ask its user" in text and "agent ask --answer approve --id q1" in text
    assert outside.read_text() == ORIGINAL and _question(tmp_path / "state")["id"] == "q1"


def test_over_mcp_the_state_directory_is_refused_without_asking(tmp_path: Path, errlog: IO[str]) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    notes = state_dir / "notes.txt"
    notes.write_text(ORIGINAL)
    answers = Answers(APPROVE)
    result = _patch_over_mcp(state_dir, errlog, notes, answers)
    assert result.is_error and "the state directory" in text_of(result)
    assert answers.asked == [] and notes.read_text() == ORIGINAL
    assert json.loads((state_dir / "latest.json").read_text())["questions"] == []
