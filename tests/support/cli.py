"""The real CLI in a subprocess (run_agent, start_agent), decision scripts, the journal, and loopback HTTP and
SMTP receivers for notifications."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from support.run_mark import RUN_MARK

REPO_ROOT = Path(__file__).resolve().parents[2]

# Variables that would change what the CLI does (policy choice, config) are removed for the child; the test
# run's mark stays, so that what the agent starts is ended with the run (support.run_mark).
_INFLUENTIAL = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


def agent_environment(**extra: str) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name == RUN_MARK or (name not in _INFLUENTIAL and not name.startswith("OPSLOOP_"))
    }
    environment["PYTHONPATH"] = str(REPO_ROOT)
    environment.update(extra)
    return environment


def run_agent(
    *arguments: str | Path, environment: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m agent ARGUMENTS`` to completion, capturing its output."""
    return subprocess.run(
        [sys.executable, "-m", "agent", *map(str, arguments)],
        capture_output=True,
        text=True,
        env=environment or agent_environment(),
        cwd=cwd or REPO_ROOT,
        timeout=timeout,
        check=False,
    )


def start_agent(
    *arguments: str | Path, environment: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agent", *map(str, arguments)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment or agent_environment(),
        cwd=cwd or REPO_ROOT,
    )


def write_script(path: Path, decisions: list[Any], when_done: str = "ask") -> Path:
    path.write_text(json.dumps({"decisions": decisions, "when_done": when_done}), encoding="utf-8")
    return path


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def journal_records(state_dir: Path) -> list[dict[str, Any]]:
    path = state_dir / "journal.jsonl"
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    """A loopback HTTP server that records every request and answers with queued status codes."""

    requests: list[ReceivedRequest] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # answered in order; 200 once exhausted
    server: ThreadingHTTPServer | None = None

    def start(self) -> HttpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver.requests.append(ReceivedRequest("POST", self.path, dict(self.headers.items()), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server = self.server
        threading.Thread(target=lambda: server.serve_forever(poll_interval=0.05), daemon=True).start()
        return self

    def url(self, path: str = "/hook") -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


class SmtpSink:
    """A real SMTP server (aiosmtpd) on loopback that keeps every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.port = free_port()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope)
        return "250 Message accepted"

    def start(self) -> SmtpSink:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
