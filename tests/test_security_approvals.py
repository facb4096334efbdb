"""Approvals that mean yes: only ``agent ask --approve ID`` or an answer that is exactly the approval word
approves; every other answer is a denial whose text reaches the policy as guidance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import journal_records, run_agent, write_script

from agent.actions import Ask
from agent.escalation import answer_question, record_question
from agent.events import UsageError
from agent.limits import extend_limits
from agent.state import ProjectState

ADVERSARIAL = [
    "not ok",
    "yes... no wait",
    "you must NOT run this, deny",
    "ok",
    "y",
    "yes",
    "approve?",
    "approve it? no",
    "approved",
    "approve, but only after the backup",
    "I approve nothing",
    "go ahead and do not",
]


def _approval_question(state: ProjectState) -> str:
    ask = Ask(
        question="shell needs approval",
        evidence=["command: touch /x"],
        question_kind="approval",
        approval_word="approve",
    )
    return record_question(state, ask).id


@pytest.mark.parametrize("answer", ADVERSARIAL)
def test_adversarial_answers_never_approve(answer: str) -> None:
    state = ProjectState(goal="approvals")
    question_id = _approval_question(state)
    question = answer_question(state, answer, question_id)
    assert question.approved is False and question.answer == answer.strip()
    assert state.take_approval("command: touch /x") is None


@pytest.mark.parametrize("answer", ["approve", "  Approve ", "APPROVE"])
def test_exactly_the_approval_word_approves_once(answer: str) -> None:
    state = ProjectState(goal="approvals")
    question_id = _approval_question(state)
    assert answer_question(state, answer, question_id).approved is True
    assert state.take_approval("command: touch /x") == question_id
    assert state.take_approval("command: touch /x") is None, "an approval runs the command once"
    assert state.take_approval("command: another") is None


def test_an_explicit_decision_wins_over_the_text() -> None:
    state = ProjectState(goal="approvals")
    denied = answer_question(state, "approve", _approval_question(state), decision="deny")
    assert denied.approved is False
    approved = answer_question(
        state,
        "approve",
        _approval_question(ProjectState(goal="g")) if False else _approval_question(state),
        decision="approve",
    )
    assert approved.approved is True
    with pytest.raises(UsageError, match="does not ask for an approval"):
        plain = record_question(state, Ask(question="which model?"))
        answer_question(state, "x", plain.id, decision="approve")


@pytest.mark.parametrize("answer", ["extend? no", "yes... no wait", "extend 10 then stop", "y no", "extending"])
def test_budget_questions_extend_only_on_an_extension(answer: str) -> None:
    state = ProjectState(goal="limits", step=10)
    state.limits.max_steps = 10
    assert extend_limits(state, answer) is None
    assert state.limits.max_steps == 10


def test_through_the_cli_only_an_explicit_approval_runs_the_command(tmp_path: Path) -> None:
    state_dir, marker = tmp_path / "state", tmp_path / "outside" / "ran"
    marker.parent.mkdir()
    call = {
        "tool": "shell",
        "arguments": {"command": f"touch {marker}", "outside_sandbox": "writes outside the writable roots"},
    }
    script = write_script(tmp_path / "plan.json", [call] * 6 + [{"finish": "done"}])
    blocked = run_agent("run", "-g", "approvals", "--script", script, "--state-dir", state_dir, cwd=tmp_path)
    assert blocked.returncode == 3, blocked.stderr
    for answer in ("not ok", "yes... no wait", "you must NOT run this, deny"):
        denied = run_agent("resume", state_dir, "--answer", answer, cwd=tmp_path)
        assert denied.returncode == 3, denied.stderr
        assert not marker.exists(), f"the answer {answer!r} ran the command"
    state = json.loads((state_dir / "latest.json").read_text())
    pending = [question for question in state["questions"] if question["answer"] is None]
    asked = run_agent("ask", "--approve", pending[0]["id"], "--state-dir", state_dir, cwd=tmp_path)
    assert asked.returncode == 0 and "(approved)" in asked.stdout, asked.stderr
    done = run_agent("resume", state_dir, cwd=tmp_path)
    assert done.returncode in (0, 3) and marker.exists(), done.stderr
    results = [entry["result"] for entry in journal_records(state_dir) if entry["kind"] == "result"]
    assert [result["ok"] for result in results][:5] == [False, False, False, False, True]
    guidance = [question["answer"] for question in json.loads((state_dir / "latest.json").read_text())["questions"]]
    assert "you must NOT run this, deny" in guidance, "a denial's text is kept as guidance"


def test_ask_refuses_mixed_or_misdirected_decisions(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = write_script(tmp_path / "plan.json", [{"ask": "which model?"}])
    assert run_agent("run", "-g", "g", "--script", script, "--state-dir", state_dir, cwd=tmp_path).returncode == 3
    for arguments in (
        ["--approve", "q1", "--deny", "q1"],
        ["--approve", "q1", "--answer", "approve"],
        ["--approve", "q1"],
    ):
        refused = run_agent("ask", *arguments, "--state-dir", state_dir, cwd=tmp_path)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert json.loads((state_dir / "latest.json").read_text())["questions"][0]["answer"] is None
