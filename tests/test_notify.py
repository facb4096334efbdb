"""Notifications to real loopback receivers: payloads, retries, failures recorded, secrets masked."""

from __future__ import annotations

import email
import json
import os
import stat
from email.header import decode_header, make_header
from pathlib import Path

import pytest
from support.cli import HttpReceiver, SmtpSink, free_port

from agent.actions import Ask
from agent.escalation import record_question
from agent.events import UsageError
from agent.notify import Notifier, parse_channel
from agent.settings import NotifySettings, SmtpSettings
from agent.state import ProjectState, Question

FAST = {"attempts": 3, "retry_wait_seconds": 0.01, "timeout_seconds": 5.0}
SECRET = "sk-proj-notify-test-secret-0123456789"


def _blocked_state() -> tuple[ProjectState, Question]:
    state = ProjectState(goal="serve kimi with eagle3")
    state.add_finding("fa3 attention crashed on SM120", ["RuntimeError: unsupported architecture"])
    state.add_finding("triton attention loads")
    question = record_question(
        state,
        Ask(
            question="GPU 3 reports Xid 79; reset it?",
            evidence=["NVRM: Xid 79, GPU has fallen off the bus", f"env had OPENAI_API_KEY={SECRET}"],
            options=["reset", "exclude GPU 3"],
            hypothesis="a hardware fault on GPU 3",
            question_kind="hardware",
        ),
    )
    state.status = "blocked"
    return state, question


def _notify(tmp_path: Path, specs: list[str], **settings: object) -> tuple[ProjectState, list[object]]:
    state, question = _blocked_state()
    notifier = Notifier(specs, NotifySettings.model_validate({**FAST, **settings}), tmp_path / "state")
    outcomes = notifier.notify("blocked", state, question)
    return state, list(outcomes)


def test_webhook_gets_everything_a_human_needs(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    state, _ = _notify(tmp_path, [f"webhook:{http_receiver.url('/opsloop/secret-path')}"])
    payload = http_receiver.requests[0].json()
    assert payload["goal"] == "serve kimi with eagle3" and payload["event"] == "blocked"
    assert payload["question_id"] == "q1" and payload["options"] == ["reset", "exclude GPU 3"]
    assert "NVRM: Xid 79, GPU has fallen off the bus" in payload["evidence"]
    assert payload["hypothesis"] == "a hardware fault on GPU 3"
    assert any("fa3 attention crashed" in line for line in payload["tried"])
    state_dir = (tmp_path / "state").resolve()
    assert payload["answer_command"] == f'agent ask --answer "..." --id q1 --state-dir {state_dir}'
    assert payload["resume_command"] == f"agent resume {state_dir}/latest.json"
    assert SECRET not in http_receiver.requests[0].body.decode()
    record = state.notifications[0]
    assert record.delivered and record.channel.startswith("webhook:http://127.0.0.1:")
    assert "secret-path" not in record.channel


def test_slack_and_ntfy_payloads(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    _notify(tmp_path, [f"slack:{http_receiver.url('/slack')}", f"ntfy:{http_receiver.url('/opsloop-topic')}"])
    slack, ntfy = http_receiver.requests
    body = slack.json()
    assert body["text"].startswith("opsloop needs a human: GPU 3 reports Xid 79")
    assert any("agent resume" in block["text"]["text"] for block in body["blocks"])
    assert ntfy.path == "/opsloop-topic" and ntfy.headers["Priority"] == "high"
    assert ntfy.headers["Title"].startswith("opsloop needs a human")
    assert "Best hypothesis: a hardware fault on GPU 3" in ntfy.body.decode()
    assert SECRET not in slack.body.decode() + ntfy.body.decode()


def test_a_non_ascii_ntfy_title_is_rfc2047_encoded(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    state = ProjectState(goal="déployer kimi")
    state.summary = "prêt — 63.6 tok/s"
    notifier = Notifier([f"ntfy:{http_receiver.url('/t')}"], NotifySettings.model_validate(FAST), tmp_path)
    notifier.notify("done", state)
    title = http_receiver.requests[0].headers["Title"]
    assert title.isascii()
    assert str(make_header(decode_header(title))) == "opsloop goal reached: prêt — 63.6 tok/s"


def test_server_errors_are_retried_until_delivered(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    http_receiver.statuses = [500, 503]
    state, _ = _notify(tmp_path, [f"webhook:{http_receiver.url()}"])
    assert len(http_receiver.requests) == 3
    assert state.notifications[0].delivered and state.notifications[0].attempts == 3


def test_client_errors_are_not_retried_and_failures_never_raise(tmp_path: Path, http_receiver: HttpReceiver) -> None:
    http_receiver.statuses = [404]
    closed = f"http://127.0.0.1:{free_port()}/nobody"
    state, _ = _notify(tmp_path, [f"webhook:{http_receiver.url()}", f"ntfy:{closed}"])
    refused, unreachable = state.notifications
    assert not refused.delivered and refused.attempts == 1 and "404" in (refused.error or "")
    assert not unreachable.delivered and unreachable.attempts == 3 and "Connect" in (unreachable.error or "")
    assert len(http_receiver.requests) == 1


def test_email_goes_through_a_real_smtp_server(tmp_path: Path, smtp_sink: SmtpSink) -> None:
    smtp = SmtpSettings(host="127.0.0.1", port=smtp_sink.port, sender="opsloop@example.test")
    state, _ = _notify(tmp_path, ["email:oncall@example.test"], smtp=smtp.model_dump())
    assert state.notifications[0].delivered
    envelope = smtp_sink.messages[0]
    assert envelope.rcpt_tos == ["oncall@example.test"]
    message = email.message_from_bytes(envelope.content)
    assert message["Subject"].startswith("opsloop needs a human")
    text = message.get_payload(decode=True).decode()
    assert "Answer: agent ask --answer" in text and "Resume: agent resume" in text and SECRET not in text


def test_email_failure_is_recorded(tmp_path: Path) -> None:
    smtp = SmtpSettings(host="127.0.0.1", port=free_port(), timeout_seconds=2)
    state, _ = _notify(tmp_path, ["email:oncall@example.test"], smtp=smtp.model_dump(), attempts=2)
    assert not state.notifications[0].delivered and state.notifications[0].attempts == 2


def test_command_gets_the_message_on_stdin_and_fields_in_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    command = f'cat > {out}/stdin.txt; printf %s "$OPSLOOP_QUESTION_ID $OPSLOOP_EVENT" > {out}/env.txt'
    state, _ = _notify(tmp_path, [f"command:{command}"])
    assert state.notifications[0].delivered and state.notifications[0].channel == "command:cat"
    assert (out / "env.txt").read_text() == "q1 blocked"
    stdin = (out / "stdin.txt").read_text()
    assert "Goal: serve kimi with eagle3" in stdin and "Resume: agent resume" in stdin and SECRET not in stdin


def test_a_failing_command_is_retried_then_recorded(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    state, _ = _notify(tmp_path, [f"command:echo x >> {counter}; echo broken >&2; exit 4"])
    assert counter.read_text().count("x") == 3
    record = state.notifications[0]
    assert not record.delivered and "exited 4" in (record.error or "") and "broken" in (record.error or "")


def _fake_notify_send(directory: Path) -> Path:
    directory.mkdir()
    program = directory / "notify-send"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {directory}/args.txt\n')
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return directory


def test_desktop_uses_notify_send_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _fake_notify_send(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    state, _ = _notify(tmp_path, ["desktop"])
    assert state.notifications[0].delivered
    arguments = (bin_dir / "args.txt").read_text()
    assert "--urgency=critical" in arguments and "GPU 3 reports Xid 79" in arguments


def test_desktop_without_notify_send_is_recorded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    state, _ = _notify(tmp_path, ["desktop"])
    record = state.notifications[0]
    assert not record.delivered and record.attempts == 1
    assert "notify-send is not installed" in (record.error or "")


@pytest.mark.parametrize("spec", ["pager:123", "webhook:ftp://x", "slack:", "email:nobody", "command:  "])
def test_bad_specs_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_channel(spec)


def test_no_channels_means_nothing_recorded(tmp_path: Path) -> None:
    state, outcomes = _notify(tmp_path, [])
    assert outcomes == [] and state.notifications == []
    assert json.loads(state.model_dump_json())["notifications"] == []
