"""A real vLLM (CPU build) for tests: the engine environment, the tiny test models, and a server process.

Everything is real: ``scripts/ci-real-engine-setup`` builds (or reuses) the engine environment and the
models; :class:`VllmServer` starts ``python -m vllm.entrypoints.openai.api_server`` (or the ``vllm``
console script) in its own session, writes its log to a file, and finds its worker processes by their
process titles (``VLLM::EngineCore``, ``VLLM::Worker``). Only the standard library is used, so the
fixture-capture tool can run it with any Python 3.11.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPOSITORY = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPOSITORY / "scripts" / "ci-real-engine-setup"
MODULE_ENTRY = "vllm.entrypoints.openai.api_server"
# Small enough for a 2-core, 24 GiB machine shared with other work; an integer number of GiB.
DEFAULT_ENGINE_ENVIRONMENT = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}

Entry = Literal["module", "console"]
Outcome = Literal["ready", "exited", "timeout"]


class RealEngineUnavailable(RuntimeError):
    """The engine environment or the test models could not be prepared."""


@dataclass(frozen=True)
class RealEngine:
    """Where the engine interpreter and the test models are."""

    python: Path
    model: Path
    drafter: Path

    @property
    def console_script(self) -> Path:
        return self.python.parent / "vllm"


def prepare(timeout: float = 1800.0) -> RealEngine:
    """Run the setup script (cached after the first run) and read the paths it prints as KEY=VALUE lines."""
    try:
        completed = subprocess.run([str(SETUP_SCRIPT)], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        raise RealEngineUnavailable(f"{SETUP_SCRIPT.name} took longer than {timeout:.0f} s") from error
    if completed.returncode != 0:
        tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
        raise RealEngineUnavailable(f"{SETUP_SCRIPT.name} failed with exit code {completed.returncode}:\n{tail}")
    values = dict(line.split("=", 1) for line in completed.stdout.splitlines() if "=" in line)
    try:
        engine = RealEngine(
            python=Path(values["OPSLOOP_REAL_ENGINE_PYTHON"]),
            model=Path(values["OPSLOOP_TEST_MODEL"]),
            drafter=Path(values["OPSLOOP_TEST_DRAFTER"]),
        )
    except KeyError as missing:
        raise RealEngineUnavailable(f"{SETUP_SCRIPT.name} printed no {missing}: {completed.stdout!r}") from None
    return engine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """(status, body); status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return 0, ""


def http_post_json(url: str, body: dict[str, object], timeout: float = 120.0) -> dict[str, object]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        value = json.load(response)
    if not isinstance(value, dict):
        raise ValueError(f"{url} answered {value!r}")
    return value


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, process title) for every process we can read."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        table[int(entry.name)] = (parent, title)
    return table


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, title) of every live descendant of ``root``."""
    table = _process_table()
    found: list[tuple[int, str]] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, title) in table.items():
            if ppid == parent:
                found.append((pid, title))
                frontier.append(pid)
    return found


@dataclass
class VllmServer:
    """One real vLLM API server with its log in ``log_path``; start with :meth:`start`, end with :meth:`stop`."""

    engine: RealEngine
    log_path: Path
    model: Path | str | None = None
    port: int = field(default_factory=free_port)
    arguments: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    entry: Entry = "module"
    wrapper: list[str] = field(default_factory=list)  # a command that runs the server, e.g. prlimit ... --
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def served_model(self) -> str:
        return str(self.model if self.model is not None else self.engine.model)

    def command(self) -> list[str]:
        if self.entry == "console":
            head = [str(self.engine.console_script), "serve", self.served_model]
        else:
            head = [str(self.engine.python), "-m", MODULE_ENTRY, "--model", self.served_model]
        return [*self.wrapper, *head, "--host", "127.0.0.1", "--port", str(self.port), *self.arguments]

    def start(self) -> VllmServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        environment = {**os.environ, **DEFAULT_ENGINE_ENVIRONMENT, **self.environment}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,
            )
        self.started_at = time.monotonic()
        return self

    def wait(self, timeout: float = 600.0) -> Outcome:
        """Until /health answers 200 (``ready``), the server exits (``exited``), or ``timeout``."""
        assert self.process is not None, "start() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return "exited"
            if http_get(f"{self.base_url}/health", timeout=2.0)[0] == 200:
                return "ready"
            time.sleep(0.5)
        return "timeout"

    def wait_exit(self, timeout: float) -> int | None:
        assert self.process is not None, "start() first"
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def children_titled(self, title: str) -> list[int]:
        assert self.process is not None, "start() first"
        return [pid for pid, name in descendants(self.process.pid) if name.startswith(title)]

    def signal_children(self, title: str, number: signal.Signals) -> list[int]:
        """Send ``number`` to every descendant whose process title starts with ``title``."""
        pids = self.children_titled(title)
        for pid in pids:
            os.kill(pid, number)
        return pids

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM to the server's process group, SIGKILL after ``timeout``; the server's exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            if self.wait_exit(timeout) is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._kill_leftovers()
        return self.process.returncode

    def _kill_leftovers(self) -> None:
        """Workers left behind in the server's session (its process group) after the server ended."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
