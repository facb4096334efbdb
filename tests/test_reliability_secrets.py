"""Fake secrets planted everywhere they can enter a run, and a scan of everything the run leaves behind.

Planted: API keys and an HF token in the agent's environment, a password only its variable's name marks as
secret, and pattern-shaped keys that are in no variable at all; in tool arguments (findings, a shell
command, a patch, an engine's environment, the question asked, the human's answer, the summary); in
engine log lines (tail_log, diagnose_log); and in tool outputs (shell output long enough to be saved in
full under outputs/). Scanned: every file under the state directory (state, previous state, journal,
saved outputs, patch records, crash logs, process logs), everything printed, and every notification
payload (webhook, Slack, ntfy bodies and headers, the e-mail, a command channel's stdin and variables).
"""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import HttpReceiver, SmtpSink, agent_environment, run_agent, write_script
from support.reliability import kill_state_processes

from twin.loader import load_scenario

ANTHROPIC_KEY = "sk-ant-api03-" + "Zq9" * 15
OPENAI_KEY = "sk-proj-" + "Yw8" * 15
HF_TOKEN = "hf_" + "Xv7" * 12
PASSWORD = "correct-horse-battery-staple-42"  # no telling shape: only MY_SERVICE_PASSWORD marks it
STRAY_KEY = "sk-ant-admin01-" + "Qp4" * 12  # in no variable: only its shape gives it away
STRAY_TOKEN = "hf_" + "Rk5" * 12
SLACK_HOOK = "https://hooks.slack.com/services/T0OPSLOOP/B0OPSLOOP/" + "Sx4" * 8
URL_PASSWORD = "url-pass-" + "Ud6" * 6  # in user:password@ URLs only
LLM_PASSWORD = "llm-pass-" + "Lm3" * 6
KEY_BODY = "MIIEpAIBAAKCAQEA" + "Kb7" * 20  # the body of a private key
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY[::-1]}\n-----END RSA PRIVATE KEY-----"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "Aw2" * 6
GITLAB_TOKEN = "glpat-" + "Gl9" * 7
GOOGLE_KEY = "AIzaSy" + "Go1" * 11
NOTIFY_TOKEN = "ntok" + "Nt8" * 6
SECRETS = {
    "anthropic key": ANTHROPIC_KEY,
    "openai key": OPENAI_KEY,
    "hf token": HF_TOKEN,
    "password": PASSWORD,
    "stray key": STRAY_KEY,
    "stray token": STRAY_TOKEN,
    "slack webhook": SLACK_HOOK.rsplit("/", 1)[1],
    "url password": URL_PASSWORD,
    "llm base url password": LLM_PASSWORD,
    "private key body": KEY_BODY,
    "private key body (2)": KEY_BODY[::-1],
    "aws secret key": AWS_SECRET,
    "gitlab token": GITLAB_TOKEN,
    "google key": GOOGLE_KEY,
    "notify token": NOTIFY_TOKEN,
}
OTHERS = (
    f"slack {SLACK_HOOK} pip https://ops:{URL_PASSWORD}@pypi.example.test/simple {GITLAB_TOKEN} {GOOGLE_KEY} "
    f"aws_secret_access_key = {AWS_SECRET}"
)


def _plan(tmp_path: Path, log: Path, target: Path, model_path: str) -> Path:
    long_output = "python3 -c \"print('x' * 9000)\""
    return write_script(
        tmp_path / "plan.json",
        [
            {
                "tool": "update_state",
                "arguments": {
                    "findings": [
                        {
                            "summary": f"keys {ANTHROPIC_KEY} {OPENAI_KEY}",
                            "evidence": [f"HF_TOKEN={HF_TOKEN}", STRAY_KEY, OTHERS, PRIVATE_KEY],
                        }
                    ]
                },
            },
            {
                "tool": "shell",
                "arguments": {
                    "command": f'echo "$HF_TOKEN $MY_SERVICE_PASSWORD {STRAY_TOKEN}"; '
                    f"{long_output}; echo $ANTHROPIC_API_KEY {STRAY_KEY}; cat {log}; echo $PIP_INDEX_URL"
                },
            },
            {"tool": "tail_log", "arguments": {"path": str(log), "lines": 20}},
            {"tool": "diagnose_log", "arguments": {"path": str(log)}},
            {
                "tool": "patch_file",
                "arguments": {
                    "path": str(target),
                    "search": "token = None",
                    "replace": f'token = "{STRAY_TOKEN}"',
                    "reason": f"use {HF_TOKEN}",
                },
            },
            {
                "tool": "launch_engine",
                "arguments": {
                    "name": "engine-1",
                    "poll_seconds": 0.2,
                    "health_every_seconds": 0.5,
                    "config": {
                        "engine": "sglang",
                        "model_path": model_path,
                        "port": 39_171,
                        "env": {
                            "HF_TOKEN": HF_TOKEN,
                            "EXTRA": f"password={PASSWORD}",
                            "MIRROR": f"https://ops:{URL_PASSWORD}@mirror.example.test/",
                            "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
                        },
                        "extra_flags": ["--api-key", OPENAI_KEY],
                    },
                },
            },
            {"tool": "stop_engine", "arguments": {"name": "engine-1", "grace_seconds": 5}},
            {
                "ask": f"Is {OPENAI_KEY} the right key for {PASSWORD}?",
                "evidence": [f"Authorization: Bearer {STRAY_KEY}", OTHERS],
                "hypothesis": f"the token {HF_TOKEN} expired",
                "options": [f"use {STRAY_TOKEN}", "stop"],
            },
            {"finish": f"served; the key was {ANTHROPIC_KEY}"},
        ],
    )


def _leaks(texts: dict[str, str]) -> list[str]:
    return [f"{name} in {where}" for where, text in texts.items() for name, secret in SECRETS.items() if secret in text]


def test_planted_secrets_appear_in_nothing_the_run_writes_or_sends(
    tmp_path: Path, http_receiver: HttpReceiver, smtp_sink: SmtpSink
) -> None:
    state_dir, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    state_dir.mkdir()
    log = tmp_path / "engine.log"
    log.write_text(
        f"[TP0] Load weight begin\nHF_TOKEN={HF_TOKEN} Authorization: Bearer {STRAY_KEY}\n"
        f"[TP0] api_key={OPENAI_KEY}\n{OTHERS}\n{PRIVATE_KEY}\n"
        f"RuntimeError: CUDA error: out of memory ({STRAY_TOKEN})\n"
    )
    target = work / "settings.py"
    target.write_text("token = None\n")
    command_out = tmp_path / "command-channel.txt"
    (state_dir / "agent.toml").write_text(
        f'[notify]\nchannels = ["slack:{http_receiver.url("/slack")}", "ntfy:{http_receiver.url("/ntfy")}", '
        f'"email:oncall@example.test", "command:cat > {command_out}; echo \\"$OPSLOOP_MESSAGE_JSON\\" >> '
        f'{command_out}"]\nattempts = 1\n[notify.smtp]\nhost = "127.0.0.1"\nport = {smtp_sink.port}\n'
        f'sender = "opsloop@example.test"\n[tools]\nallowed_write_roots = ["{work}"]\n'
        f'readable_log_dirs = ["{tmp_path}"]\n'
    )
    environment = agent_environment(
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        OPENAI_API_KEY=OPENAI_KEY,
        HF_TOKEN=HF_TOKEN,
        MY_SERVICE_PASSWORD=PASSWORD,
        PIP_INDEX_URL=f"https://ops:{URL_PASSWORD}@pypi.example.test/simple",
        AWS_SECRET_ACCESS_KEY=AWS_SECRET,
    )
    model_dir = load_scenario("h100-healthy")[0].model.dir_name
    model_path = str(state_dir / "sim" / "h100-healthy" / "fs" / "models" / model_dir)
    plan = _plan(tmp_path, log, target, model_path)
    printed: dict[str, str] = {}
    try:
        blocked = run_agent(
            "run",
            "-g",
            f"serve with {HF_TOKEN}",
            "--policy",
            "scripted",
            "--script",
            plan,
            "--sim",
            "h100-healthy",
            "--notify",
            f"webhook:{http_receiver.url('/hook')}?token={NOTIFY_TOKEN}",
            "--llm-base-url",
            f"http://ops:{LLM_PASSWORD}@127.0.0.1:9/v1",
            "--state-dir",
            state_dir,
            environment=environment,
            timeout=180,
        )
        assert blocked.returncode == 3, blocked.stderr[-3000:]
        answered = run_agent(
            "ask",
            "--answer",
            f"use {STRAY_TOKEN} with {PASSWORD} via https://ops:{URL_PASSWORD}@proxy.example.test {GITLAB_TOKEN}",
            "--state-dir",
            state_dir,
            environment=environment,
        )
        done = run_agent("resume", state_dir, environment=environment, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        status = run_agent("status", state_dir, "--json", environment=environment)
        for name, result in (("run", blocked), ("ask", answered), ("resume", done), ("status", status)):
            printed[f"{name} stdout"], printed[f"{name} stderr"] = result.stdout, result.stderr
    finally:
        kill_state_processes(state_dir)

    state = json.loads((state_dir / "latest.json").read_text())
    calls = [
        entry
        for entry in map(json.loads, (state_dir / "journal.jsonl").read_text().splitlines())
        if entry["kind"] == "result"
    ]
    assert [entry["result"]["ok"] for entry in calls] == [True] * 7, [entry["result"]["error"] for entry in calls]
    assert any(path.parent.name == "outputs" for path in state_dir.rglob("*")), "no full output was saved"
    assert target.read_text() == f'token = "{STRAY_TOKEN}"\n', "the patch itself must be made as asked"

    raw = json.loads((state_dir / "secrets.json").read_text())
    assert raw["notify"] == [f"webhook:{http_receiver.url('/hook')}?token={NOTIFY_TOKEN}"], "the raw target is kept"
    assert LLM_PASSWORD in raw["config_overrides"]["llm"]["base_url"]
    assert (state_dir / "secrets.json").stat().st_mode & 0o077 == 0
    hook_paths = [request.path for request in http_receiver.requests if request.path.startswith("/hook")]
    assert hook_paths and all(path == f"/hook?token={NOTIFY_TOKEN}" for path in hook_paths), hook_paths
    written = {
        str(path.relative_to(state_dir)): path.read_text(errors="replace")
        for path in state_dir.rglob("*")
        if path.is_file() and not path.is_relative_to(state_dir / "sim") and path.name != "secrets.json"
    }
    sent = {
        f"HTTP {request.path}": request.body.decode() + json.dumps(request.headers)
        for request in http_receiver.requests
    }
    sent |= {
        f"e-mail {index}": message.content.decode(errors="replace") for index, message in enumerate(smtp_sink.messages)
    }
    sent["command channel"] = command_out.read_text()
    assert {request.path.split("?")[0] for request in http_receiver.requests} == {"/hook", "/slack", "/ntfy"}
    assert len(smtp_sink.messages) == 2 and "[REDACTED]" in sent["command channel"]
    assert [item["event"] for item in state["notifications"]].count("blocked") == 5
    assert not _leaks(written | sent | printed)
    print(
        f"\nscanned {len(written)} files, {len(sent)} payloads, {len(printed)} outputs for {len(SECRETS)} "
        "planted secrets: none found"
    )
