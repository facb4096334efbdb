"""`agent mcp` spoken to by the MCP SDK's own client, over stdio and over streamable HTTP.

The server runs as a real process on the simulated host (kimi-sm120); an elicitation callback plays the
human in the client. Shell commands asked to run outside the sandbox target a `sleep` process the test
started (inside the sandbox they could not reach it): each needs approval, so whether that process
survives shows whether the command ran.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from support.cli import REPO_ROOT, agent_environment, run_agent
from support.mcp_client import (
    APPROVE,
    DECLINE,
    DENY,
    Answers,
    journal_calls,
    start_http_server,
    stdio_client_for,
    stop_server,
    structured,
    text_of,
)
from support.sim import free_port

from tools.catalog import default_registry
from tools.engines.launch import LaunchEngineArgs

SCENARIO = "kimi-sm120"
OUTSIDE = "signals a process the agent did not start"


def _kill(process: subprocess.Popen[bytes]) -> dict[str, str]:
    return {"command": f"kill {process.pid}", "outside_sandbox": OUTSIDE}


TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A state directory with an engine log in its logs folder (what diagnose_log reads)."""
    directory = tmp_path / "state"
    (directory / "logs").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "data" / "logs" / "sglang-kv-oom.log", directory / "logs" / "engine-kv.log")
    return directory


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[IO[str]]:
    with (tmp_path / "server-stderr.log").open("w") as handle:
        yield handle


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process the agent did not start: the guard asks before signalling it."""
    process = subprocess.Popen(["sleep", "300"])
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


def _question(state_dir: Path, question_id: str) -> dict[str, Any]:
    document = json.loads((state_dir / "latest.json").read_text())
    return next(item for item in document["questions"] if item["id"] == question_id)


async def _probe_and_diagnose(client: Client, state_dir: Path) -> None:
    probe = structured(await client.call_tool("probe_system", {}))
    assert len(probe["environment"]["gpus"]) == 8 and probe["environment"]["host"] == "sim"
    diagnosis = structured(await client.call_tool("diagnose_log", {"path": str(state_dir / "logs" / "engine-kv.log")}))
    assert diagnosis["class"] == "cuda_oom" and "mem_fraction_static" in diagnosis["key_line"]


def test_stdio_lists_the_typed_tools_records_each_call_and_refuses_a_second_agent(
    state_dir: Path, errlog: IO[str]
) -> None:
    registry = default_registry()

    async def session() -> None:
        async with stdio_client_for(state_dir, "--sim", SCENARIO, errlog=errlog) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == {*registry.names(), "finish_run"}
            assert listed["launch_engine"].input_schema == LaunchEngineArgs.model_json_schema()
            assert listed["probe_system"].output_schema is not None
            await _probe_and_diagnose(client, state_dir)
            lines: list[str] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                lines.append(message or "")

            waited = await client.call_tool("wait", {"seconds": 0.2, "reason": "a look"}, progress_callback=on_progress)
            assert structured(waited)["waited_seconds"] >= 0.2 and lines == ["waiting 0.2 s for a look"]
            invalid = await client.call_tool("launch_engine", {"config": {"engine": "tgi"}})
            assert invalid.is_error and "invalid arguments for launch_engine" in text_of(invalid)

            # While the client is connected, the server holds the directory: a second agent is refused.
            second_run = run_agent("run", "--goal", "g", "--policy", "runbook", "--state-dir", state_dir)
            assert second_run.returncode == 2 and "in use by a running agent" in second_run.stderr
            second_server = run_agent("mcp", "--state-dir", state_dir)
            assert second_server.returncode == 2 and "in use by a running agent" in second_server.stderr
            status = run_agent("status", state_dir)
            assert "is running it now" in status.stdout and "policy mcp" in status.stdout

    anyio.run(session)
    calls = journal_calls(state_dir)
    assert [(record["kind"], record["tool"]) for record in calls] == [
        ("intent", "probe_system"),
        ("result", "probe_system"),
        ("intent", "diagnose_log"),
        ("result", "diagnose_log"),
        ("intent", "wait"),
        ("result", "wait"),
        ("intent", "launch_engine"),
        ("result", "launch_engine"),
    ]
    assert [record["result"]["ok"] for record in calls if record["kind"] == "result"] == [True, True, True, False]
    document = json.loads((state_dir / "latest.json").read_text())
    assert document["step"] == 4 and document["environment"]["host"] == "sim"
    assert document["run"]["simulated_scenario"] == SCENARIO
    assert run_agent("status", state_dir).returncode == 0  # the lock went with the server


def test_stdio_approval_on_the_handshake_protocol_runs_the_command_once(
    state_dir: Path, errlog: IO[str], sleeper: subprocess.Popen[bytes]
) -> None:
    answers = Answers(APPROVE)

    async def session() -> dict[str, Any]:
        async with stdio_client_for(state_dir, errlog=errlog, elicitation=answers, mode="legacy") as client:
            return structured(await client.call_tool("shell", _kill(sleeper)))

    output = anyio.run(session)
    assert output["exit_code"] == 0 and output["approved_by_question"] == "q1"
    assert sleeper.wait(timeout=10) != 0  # the approved command ran: the process got the signal
    assert len(answers.asked) == 1 and f"kill {sleeper.pid}" in answers.asked[0]
    assert _question(state_dir, "q1")["answer"] == "approve"
    journal = [json.loads(line) for line in (state_dir / "journal.jsonl").read_text().splitlines()]
    assert {"kind": "answer", "question_id": "q1", "answer": "approve"}.items() <= next(
        record for record in journal if record["kind"] == "answer"
    ).items()


@pytest.mark.parametrize("reply", [DENY, DECLINE], ids=["deny", "decline"])
def test_anything_but_an_explicit_approve_refuses_with_the_reason(
    state_dir: Path, errlog: IO[str], sleeper: subprocess.Popen[bytes], reply: Any
) -> None:
    answers = Answers(reply)

    async def session() -> str:
        async with stdio_client_for(state_dir, errlog=errlog, elicitation=answers) as client:
            result = await client.call_tool("shell", _kill(sleeper))
            assert result.is_error
            return text_of(result)

    text = anyio.run(session)
    assert "Not run" in text and "not started by the agent" in text and "the user denied it" in text
    assert sleeper.poll() is None and len(answers.asked) == 1
    assert _question(state_dir, "q1")["answer"] == "deny"


def test_a_client_without_elicitation_gets_the_reason_and_the_question_stays_open(
    state_dir: Path, errlog: IO[str], sleeper: subprocess.Popen[bytes]
) -> None:
    async def session() -> str:
        async with stdio_client_for(state_dir, errlog=errlog) as client:
            result = await client.call_tool("shell", _kill(sleeper))
            assert result.is_error
            return text_of(result)

    text = anyio.run(session)
    assert "cannot ask its user" in text and "agent ask --answer approve --id q1" in text
    assert sleeper.poll() is None
    question = _question(state_dir, "q1")
    assert question["answer"] is None and question["kind"] == "approval"


def test_resources_and_the_bring_up_prompt(state_dir: Path, errlog: IO[str]) -> None:
    async def session() -> tuple[str, str, str, str]:
        async with stdio_client_for(state_dir, "--goal", "serve kimi", errlog=errlog) as client:
            uris = {str(resource.uri) for resource in (await client.list_resources()).resources}
            assert uris == {"opsloop://state/latest.json", "opsloop://state/handover.md"}
            document = (await client.read_resource("opsloop://state/latest.json")).contents[0]
            note = (await client.read_resource("opsloop://state/handover.md")).contents[0]
            prompt = await client.get_prompt("bring_up", {"model": "Kimi-K2.5", "engine": "sglang"})
            with pytest.raises(MCPError, match="unknown engine"):
                await client.get_prompt("bring_up", {"model": "Kimi-K2.5", "engine": "tgi"})
            texts = [getattr(item, "text", "") for item in (document, note, prompt.messages[0].content)]
            return texts[0], texts[1], texts[2], str(prompt.description)

    document, note, prompt, description = anyio.run(session)
    assert json.loads(document)["goal"] == "serve kimi"
    assert note.startswith("# serve kimi") and "is running it now" in note
    assert description == "Bring up Kimi-K2.5 with sglang"
    for step in ("probe_system", "launch_engine", "check_correctness", "run_bench", "train_drafter", "finish_run"):
        assert step in prompt
    assert "port 30000" in prompt and "1.05x" in prompt


def test_http_with_a_bearer_token_serves_the_tools_and_asks_in_the_2026_protocol(
    state_dir: Path, tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    port = free_port()
    environment = agent_environment(OPSLOOP_MCP_TOKEN=TOKEN)
    server = start_http_server(state_dir, port, tmp_path / "http.log", "--sim", SCENARIO, environment=environment)
    url = f"http://127.0.0.1:{port}/mcp"
    answers = Answers(APPROVE)
    try:
        unauthorised = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
        assert unauthorised.status_code == 401

        async def session() -> tuple[str, dict[str, Any]]:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http,
                Client(streamable_http_client(url, http_client=http), elicitation_callback=answers) as client,
            ):
                assert "probe_system" in {tool.name for tool in (await client.list_tools()).tools}
                await _probe_and_diagnose(client, state_dir)
                output = structured(await client.call_tool("shell", _kill(sleeper)))
                return client.protocol_version, output

        protocol, output = anyio.run(session)
    finally:
        # uvicorn shuts down cleanly on SIGTERM, then exits by that signal (as it came).
        assert stop_server(server) in (0, -signal.SIGTERM)
    assert "Traceback" not in (tmp_path / "http.log").read_text()
    assert protocol == "2026-07-28" and output["approved_by_question"] == "q1"
    assert sleeper.wait(timeout=10) != 0 and len(answers.asked) == 1
    tools = [record["tool"] for record in journal_calls(state_dir) if record["kind"] == "result"]
    assert tools[:2] == ["probe_system", "diagnose_log"] and tools[-1] == "shell"


def test_http_off_loopback_needs_a_token_and_writes_nothing(tmp_path: Path) -> None:
    refused = run_agent("mcp", "--state-dir", tmp_path / "state", "--http", f"0.0.0.0:{free_port()}")
    assert refused.returncode == 2 and "OPSLOOP_MCP_TOKEN" in refused.stderr
    assert not (tmp_path / "state").exists()
    malformed = run_agent("mcp", "--state-dir", tmp_path / "state", "--http", "localhost:http")
    assert malformed.returncode == 2 and "HOST:PORT" in malformed.stderr


def _readme_snippets() -> dict[str, list[str]]:
    """The command lines the README's configuration snippets give Claude Code, opencode and Codex."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Working from a coding agent (MCP)") : readme.index("## Reports")]
    blocks = re.findall(r"```(json|toml)\n(.*?)```", section, re.DOTALL)
    claude, opencode = (json.loads(text) for kind, text in blocks if kind == "json")
    codex = tomllib.loads(next(text for kind, text in blocks if kind == "toml"))
    server = claude["mcpServers"]["opsloop"]
    return {
        "claude-code": [server["command"], *server["args"]],
        "opencode": opencode["mcp"]["opsloop"]["command"],
        "codex": [codex["mcp_servers"]["opsloop"]["command"], *codex["mcp_servers"]["opsloop"]["args"]],
    }


def test_the_readme_snippets_start_a_working_server(tmp_path: Path, errlog: IO[str]) -> None:
    snippets = _readme_snippets()
    assert snippets["claude-code"] == snippets["opencode"] == snippets["codex"]  # one command line for all three
    command, *arguments = snippets["codex"]
    assert command == "/opt/opsloop/.venv/bin/agent" and arguments[:2] == ["mcp", "--state-dir"]
    installed = Path(sys.executable).parent / "agent"  # the same entry point, where this checkout installed it
    arguments[2] = str(tmp_path / "state")
    parameters = StdioServerParameters(command=str(installed), args=arguments, env=agent_environment(), cwd=REPO_ROOT)

    async def session() -> set[str]:
        async with Client(stdio_client(parameters, errlog=errlog)) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert {"probe_system", "launch_engine", "finish_run"} <= anyio.run(session)
    assert (tmp_path / "state" / "latest.json").exists()
