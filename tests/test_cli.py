"""The command line, run as a real process: exit codes, answers and resumes, errors, notifications."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import HttpReceiver, agent_environment, run_agent, write_script
from typer.testing import CliRunner

from agent.cli import app

RECORD_PLAN = {
    "tool": "update_state",
    "arguments": {"tasks": [{"id": "t1", "title": "plan"}], "findings": [{"summary": "planned", "evidence": ["e1"]}]},
}


def _script(tmp_path: Path, *decisions: object) -> Path:
    return write_script(tmp_path / "script.json", list(decisions))


def _state(state_dir: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((state_dir / "latest.json").read_text())
    return loaded


def test_a_run_that_reaches_its_goal_exits_0_and_leaves_a_readable_state(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = _script(tmp_path, RECORD_PLAN, {"finish": "served at 63.6 tok/s"})
    done = run_agent("run", "--goal", "serve it", "--policy", "scripted", "--script", script, "--state-dir", state_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("DONE: serve it") and "served at 63.6 tok/s" in done.stdout
    assert "step 0: update_state" in done.stderr

    status = run_agent("status", state_dir / "latest.json")
    assert status.returncode == 0 and "# serve it" in status.stdout and "- step 0: planned" in status.stdout
    document = json.loads(run_agent("status", "--state-dir", state_dir, "--json").stdout)
    assert document["status"] == "done" and document["run"]["policy"] == "scripted"
    assert (state_dir / "previous.json").exists() and (state_dir / "journal.jsonl").exists()


def test_blocked_exits_3_then_an_answer_and_a_resume_finish_the_run(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = _script(
        tmp_path, {"ask": "Which port?", "options": ["8000", "30000"], "hypothesis": "either"}, {"finish": "ok"}
    )
    blocked = run_agent("run", "-g", "g", "--script", script, "--state-dir", state_dir)
    assert blocked.returncode == 3, blocked.stderr
    assert "Which port?" in blocked.stdout and f"agent resume {state_dir}/latest.json" in blocked.stdout

    questions = json.loads(run_agent("ask", state_dir, "--json").stdout)["questions"]
    assert [(item["id"], item["options"]) for item in questions] == [("q1", ["8000", "30000"])]
    waiting = run_agent("resume", state_dir / "latest.json")
    assert waiting.returncode == 3 and "still waiting for an answer" in waiting.stderr

    resumed = run_agent("resume", state_dir / "latest.json", "--answer", "30000", "--json")
    assert resumed.returncode == 0, resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert outcome["event"] == "done" and outcome["exit_code"] == 0 and outcome["questions"] == []
    assert _state(state_dir)["questions"][0]["answer"] == "30000"  # type: ignore[index]


def test_ask_answer_records_and_resume_continues(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    blocked = run_agent(
        "run", "-g", "g", "--script", _script(tmp_path, {"ask": "Go?"}, {"finish": "went"}), "--state-dir", state_dir
    )
    assert blocked.returncode == 3, blocked.stderr
    answered = run_agent("ask", "--answer", "go", "--state-dir", state_dir, "--json")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["answered"]["answer"] == "go"
    resumed = run_agent("resume", "--state-dir", state_dir)
    assert resumed.returncode == 0, resumed.stderr


def test_a_run_that_gives_up_exits_1(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = _script(tmp_path, {"fail": "model larger than all GPUs"})
    failed = run_agent("run", "-g", "g", "--script", script, "--state-dir", state_dir)
    assert failed.returncode == 1
    assert _state(state_dir)["status"] == "failed"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["run", "-g", "g", "--policy", "guess"], "policy"),
        (["run", "-g", "g", "--policy", "scripted"], "needs a decisions file"),
        (["run", "-g", "g", "--script", "missing.json"], "cannot read script"),
        (["run", "-g", "g", "--script", "SCRIPT", "--notify", "pager:1"], "unknown notify spec"),
        (["run", "-g", "g", "--script", "SCRIPT", "--config", "missing.toml"], "does not exist"),
        (["run", "-g", "g", "--script", "SCRIPT", "--sim", "no-such-scenario"], "cannot load simulation scenario"),
        (["resume"], "no state file at"),
        (["status", "state/latest.json"], "no state file at"),
        (["status", "elsewhere/latest.json"], "give one or the other"),
        (["ask", "--answer", "x"], "no state file at"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    tmp_path: Path, arguments: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process through the same typer app (the subprocess case below proves the real process agrees)."""
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, {"finish": "ok"})
    arguments = [str(script) if item == "SCRIPT" else item for item in arguments]
    result = CliRunner().invoke(app, [*arguments, "--state-dir", str(tmp_path / "state")])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("agent: error:")


def test_a_usage_error_in_a_real_process_is_one_line_without_traceback(tmp_path: Path) -> None:
    result = run_agent("run", "-g", "g", "--policy", "scripted", "--state-dir", tmp_path / "state")
    assert result.returncode == 2
    assert result.stderr == "agent: error: the scripted policy needs a decisions file: --script FILE\n"


def test_a_corrupt_state_is_named_never_overwritten_and_archived_only_on_request(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = _script(tmp_path, RECORD_PLAN, {"ask": "?"})
    run_agent("run", "-g", "g", "--script", script, "--state-dir", state_dir)
    latest = state_dir / "latest.json"
    latest.write_text('{"goal": "g", "status": "runn', encoding="utf-8")
    corrupt = latest.read_bytes()

    commands: list[list[str | Path]] = [
        ["resume", latest],
        ["ask", "--answer", "x", "--state-dir", state_dir],
        ["run", "-g", "again", "--script", script, "--state-dir", state_dir],
    ]
    for command in commands:
        refused = run_agent(*command)
        assert refused.returncode == 2 and str(latest) in refused.stderr and "Traceback" not in refused.stderr
        assert "previous.json is usable" in refused.stderr
        assert latest.read_bytes() == corrupt

    fresh = run_agent("run", "-g", "again", "--new", "--script", script, "--state-dir", state_dir)
    assert fresh.returncode == 3 and "moved to" in fresh.stderr
    archived = next((state_dir / "archive").iterdir())
    assert (archived / "latest.json").read_bytes() == corrupt


def test_an_unfinished_run_is_not_replaced_without_new(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    run_agent("run", "-g", "first", "--script", _script(tmp_path, {"ask": "?"}), "--state-dir", state_dir)
    refused = run_agent("run", "-g", "second", "--script", tmp_path / "script.json", "--state-dir", state_dir)
    assert refused.returncode == 2 and "unfinished run" in refused.stderr and "agent resume" in refused.stderr
    assert _state(state_dir)["goal"] == "first"


def test_a_budget_stop_is_a_question_and_extend_continues(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    decisions = [
        {"tool": "update_state", "arguments": {"findings": [{"summary": f"f{number}"}]}} for number in range(3)
    ]
    script = _script(tmp_path, *decisions, {"finish": "ok"})
    limited = run_agent("run", "-g", "g", "--script", script, "--max-steps", "1", "--state-dir", state_dir)
    assert limited.returncode == 3 and "Budget reached (steps: 1 of 1); extend?" in limited.stdout
    again = run_agent("resume", state_dir, "--answer", "extend")  # doubles: 2 steps
    assert again.returncode == 3 and "steps: 2 of 2" in again.stdout
    raised = run_agent("resume", state_dir, "--max-steps", "10")
    assert raised.returncode == 0, raised.stderr
    findings = [item["summary"] for item in _state(state_dir)["findings"]]  # type: ignore[attr-defined]
    assert [item for item in findings if item.startswith("f")] == ["f0", "f1", "f2"]


def test_notifications_are_sent_on_blocked_and_done_across_a_resume(
    tmp_path: Path, http_receiver: HttpReceiver
) -> None:
    state_dir = tmp_path / "state"
    script = _script(tmp_path, RECORD_PLAN, {"ask": "Reset GPU 3?", "evidence": ["Xid 79"]}, {"finish": "ok"})
    run_agent(
        "run", "-g", "g", "--script", script, "--notify", f"webhook:{http_receiver.url()}", "--state-dir", state_dir
    )
    run_agent("resume", state_dir, "--answer", "no")
    events = [request.json()["event"] for request in http_receiver.requests]
    assert events == ["blocked", "done"]
    blocked = http_receiver.requests[0].json()
    assert blocked["evidence"] == ["Xid 79"] and blocked["tried"] == ["step 0: planned"]
    assert [item["delivered"] for item in _state(state_dir)["notifications"]] == [True, True]  # type: ignore[attr-defined]


def test_a_config_file_in_the_state_directory_is_read(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "agent.toml").write_text(
        f'[notify]\nchannels = ["ntfy:{http_receiver.url("/topic")}"]\n[limits]\nmax_steps = 7\n'
    )
    run_agent("run", "-g", "g", "--script", _script(tmp_path, {"finish": "ok"}), "--state-dir", state_dir)
    assert http_receiver.requests[0].path == "/topic"
    assert _state(state_dir)["limits"]["max_steps"] == 7  # type: ignore[index]


def test_secrets_never_reach_state_journal_or_notifications(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    state_dir = tmp_path / "state"
    key, token = "sk-proj-cli-secret-abcdefghijklmnop", "hf_CliSecretTokenAbcdefghij"
    leak = {
        "tool": "update_state",
        "arguments": {
            "findings": [
                {"summary": f"launched with OPENAI_API_KEY={key}", "evidence": [f"HF_TOKEN={token}", f"key {key}"]}
            ]
        },
    }
    script = _script(tmp_path, leak, {"ask": f"Is {key} valid?", "evidence": [token]})
    environment = agent_environment(OPENAI_API_KEY=key, HF_TOKEN=token)
    result = run_agent(
        "run",
        "-g",
        "g",
        "--script",
        script,
        "--notify",
        f"webhook:{http_receiver.url()}",
        "--state-dir",
        state_dir,
        environment=environment,
    )
    assert result.returncode == 3, result.stderr
    written = [path.read_text() for path in state_dir.rglob("*") if path.is_file()]
    written += [request.body.decode() for request in http_receiver.requests]
    written += [result.stdout, result.stderr]
    assert written and not [text for text in written if key in text or token in text]
    assert _state(state_dir)["run"]["policy"] == "scripted"  # type: ignore[index]


def test_python_dash_m_agent_lists_the_commands() -> None:
    result = run_agent("--help")
    assert result.returncode == 0
    for command in ("run", "resume", "ask", "status"):
        assert command in result.stdout
