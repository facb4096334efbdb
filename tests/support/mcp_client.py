"""The MCP SDK's own client against ``agent mcp``: the server as its stdio subprocess, or over HTTP.

Nothing is faked: the SDK client speaks to the real server process; an elicitation callback plays the
human answering in the client.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client

from support.cli import REPO_ROOT, agent_environment

ElicitationCallback = Callable[[ClientRequestContext, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def server_arguments(state_dir: Path, *extra: str) -> list[str]:
    return ["-m", "agent", "mcp", "--state-dir", str(state_dir), *extra]


def stdio_client_for(
    state_dir: Path,
    *extra: str,
    errlog: TextIO,
    elicitation: ElicitationCallback | None = None,
    mode: str = "auto",
) -> Client:
    """A client that starts ``agent mcp`` as its subprocess (its stderr goes to ``errlog``)."""
    parameters = StdioServerParameters(
        command=sys.executable, args=server_arguments(state_dir, *extra), env=agent_environment(), cwd=REPO_ROOT
    )
    return Client(stdio_client(parameters, errlog=errlog), mode=mode, elicitation_callback=elicitation)


class Answers:
    """Plays the human in the client: gives ``reply`` to every form and keeps the messages shown."""

    def __init__(self, reply: types.ElicitResult) -> None:
        self.reply = reply
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return self.reply


APPROVE = types.ElicitResult(action="accept", content={"decision": "approve"})
DENY = types.ElicitResult(action="accept", content={"decision": "deny"})
DECLINE = types.ElicitResult(action="decline")


def structured(result: types.CallToolResult) -> dict[str, Any]:
    """The structured output of a successful call (failing the test with the error text otherwise)."""
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def start_http_server(
    state_dir: Path, port: int, log: Path, *extra: str, environment: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``agent mcp --http 127.0.0.1:PORT`` as a process, returned once it accepts connections."""
    with log.open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, *server_arguments(state_dir, "--http", f"127.0.0.1:{port}", *extra)],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            env=environment or agent_environment(),
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"agent mcp exited with {process.returncode}: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"agent mcp did not listen on port {port}: {log.read_text()}")


def stop_server(process: subprocess.Popen[bytes]) -> int:
    """Stop a server this test started (SIGTERM: uvicorn shuts down cleanly) and return its exit code."""
    if process.poll() is None:
        process.terminate()
    return process.wait(timeout=30)


def journal_calls(state_dir: Path) -> list[dict[str, Any]]:
    """The journal's intent and result records of MCP calls, in order."""
    records = [json.loads(line) for line in (state_dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record.get("source") == "mcp" and record["kind"] in ("intent", "result")]
