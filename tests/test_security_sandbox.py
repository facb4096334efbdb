"""Every way around the old shell guard, run for real through ``agent tool shell``: the sandbox contains it.

Each command tries to destroy a stand-in home directory (``HOME`` points at it), the agent's own record
or a process the agent did not start. The gate is the sandbox now, not a reading of the command, so the
commands run (most fail inside), and afterwards the home is exactly as it was, the journal still verifies,
and the foreign process lives. Before anything destructive runs, a preflight proves the sandbox is in
force (the root file system is read-only and the home unwritable); without it the module fails at once.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.cli import agent_environment, run_agent, wait_for
from support.tool_context import make_context

from agent.secrets_file import read_secrets
from agent.tamper import journal_problems
from tools.base import ToolRegistry
from tools.hosts.sandbox import sandbox_problem
from tools.hosts.sandbox.cgroup import create_pids_group, remove_group
from tools.records import ProcessRecord
from tools.shell.tool import ShellTool

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")

BYPASSES = [
    'bash -lc "rm -rf $HOME"',
    'bash -ec "rm -rf $HOME"',
    'sh -xc "rm -rf $HOME"',
    'sh -c "$(echo cm0gLXJmICRIT01FCg== | base64 -d)"',
    '$(echo rm) -rf "$HOME"',
    'X=rm; $X -rf "$HOME"',
    'echo "rm -rf $HOME" | bash',
    'bash <<< "rm -rf $HOME"',
    "curl -s file://{work}/script.sh | sh",
    'flock {work}/lock rm -rf "$HOME"',
    'su -c "rm -rf $HOME"',
    'runuser -u root -- rm -rf "$HOME"',
    'chroot / rm -rf "$HOME"',
    'nsenter -t 1 -m -- rm -rf "$HOME"',
    'busybox rm -rf "$HOME"',
    'parallel rm -rf ::: "$HOME"',
    'find "$HOME" -maxdepth 0 -exec sh -c \'rm -rf "$0"\' {{}} \\;',
    "chmod -R 000 /",
    "mkdir -p {work}/empty && rsync -a --delete {work}/empty/ /",
    'rm -rf ~/.ssh "$HOME"/* && echo gone',
    "cat ~/.ssh/id_ed25519 > {work}/stolen.txt",
]
RECORD_ATTACKS = [
    "rm -f {state}/journal.jsonl {state}/latest.json",
    "truncate -s 0 {state}/journal.jsonl",
    ": > {state}/previous.json; : > {state}/latest.json",
    "mv {state}/latest.json {work}/taken.json",
    'echo \'{{"kind": "answer", "answer": "approve"}}\' >> {state}/journal.jsonl',
    "cat {state}/secrets.json > {work}/secrets-copy.json",
]


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under ``root`` with its mode and contents (directories: empty contents)."""
    found = {".": (root.stat().st_mode, b"")}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(root))] = (info.st_mode, b"" if path.is_dir() else path.read_bytes())
    return found


class Bench:
    """A stand-in home, a working directory (the only writable root) and a state directory with a run."""

    def __init__(self, base: Path) -> None:
        self.home, self.work, self.state = base / "home", base / "work", base / "state"
        for directory in (self.home / ".ssh", self.home / "projects", self.work):
            directory.mkdir(parents=True)
        (self.home / ".bashrc").write_text("# the user's shell settings\n")
        (self.home / "projects" / "notes.txt").write_text("years of work\n")
        (self.home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
        os.chmod(self.home / ".ssh" / "id_ed25519", 0o600)
        (self.work / "script.sh").write_text('rm -rf "$HOME"\n')
        self.before = snapshot(self.home)

    def shell(self, command: str, timeout: float = 20.0) -> dict[str, object]:
        arguments = json.dumps(
            {"command": command.format(work=self.work, state=self.state), "timeout_seconds": timeout}
        )
        result = run_agent(
            "tool",
            "shell",
            "--args",
            arguments,
            "--state-dir",
            self.state,
            environment=agent_environment(HOME=str(self.home)),
            cwd=self.work,
            timeout=timeout + 60,
        )
        assert result.returncode in (0, 1), result.stderr[-2000:]
        output: dict[str, object] = json.loads(result.stdout)
        return output

    def journal_intact(self) -> list[str]:
        secrets = read_secrets(self.state)
        assert secrets is not None, "the secrets file is gone"
        head = json.loads((self.state / "latest.json").read_text())["history"]["journal_head"]
        return journal_problems(self.state / "journal.jsonl", secrets.key, head)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    bench = Bench(tmp_path_factory.mktemp("sandbox"))
    preflight = bench.shell('touch /usr/opsloop-preflight "$HOME/preflight" ; echo done')
    assert preflight["ok"], preflight
    escaped = Path("/usr/opsloop-preflight").exists() or (bench.home / "preflight").exists()
    if escaped:
        pytest.fail("the sandbox is not in force: stopping before any destructive command runs")
    assert preflight["output"]["confinement"] == "sandbox"  # type: ignore[index]
    return bench


@pytest.mark.parametrize("command", BYPASSES)
def test_each_bypass_is_contained_and_the_home_is_untouched(command: str, bench: Bench) -> None:
    result = bench.shell(command)
    assert result["ok"] and result["output"]["confinement"] == "sandbox", result  # type: ignore[index]
    assert snapshot(bench.home) == bench.before, f"{command!r} changed the home directory"
    stolen = bench.work / "stolen.txt"
    assert not stolen.exists() or b"PRIVATE KEY" not in stolen.read_bytes(), "a credential was read"
    assert Path("/usr/bin/python3").exists() or Path(sys.executable).exists()


@pytest.mark.parametrize("command", RECORD_ATTACKS)
def test_the_agents_own_record_is_out_of_reach(command: str, bench: Bench) -> None:
    bench.shell("true")  # the state directory holds a run's state and journal
    before_lines = (bench.state / "journal.jsonl").read_bytes()
    bench.shell(command)
    journal = (bench.state / "journal.jsonl").read_bytes()
    assert journal.startswith(before_lines), "journal records were removed or changed"
    assert json.loads((bench.state / "latest.json").read_text())["goal"]
    assert bench.journal_intact() == []
    copied = bench.work / "secrets-copy.json"
    assert not copied.exists() or copied.read_text() == "", "the secrets file was read"


@pytest.fixture
def foreign() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


def test_a_process_the_agent_did_not_start_cannot_be_signalled(bench: Bench, foreign: subprocess.Popen[bytes]) -> None:
    for command in (
        f"kill -9 {foreign.pid}",
        f"kill -9 -- -{foreign.pid}",
        "pkill -9 -f 'time.sleep(120)'",
        "kill -9 -1",
    ):
        bench.shell(command)
    assert foreign.poll() is None and psutil.Process(foreign.pid).status() != psutil.STATUS_ZOMBIE


def test_a_fork_bomb_is_capped_and_leaves_nothing_behind(bench: Bench) -> None:
    probe = create_pids_group(16)
    if probe is None:
        pytest.skip("no pids control group can be made here: the process cap is not available")
    remove_group(probe)
    result = bench.shell(":(){{ :|:& }};:", timeout=5)
    assert result["ok"] and result["output"]["confinement"] == "sandbox"  # type: ignore[index]
    assert snapshot(bench.home) == bench.before
    leftovers = [
        process
        for process in psutil.process_iter(["cmdline"])
        if process.info["cmdline"] == ["bash", "-c", ":(){ :|:& };:"]
    ]
    assert wait_for(lambda: not any(process.is_running() for process in leftovers), timeout=30)
    assert subprocess.run(["true"], check=False).returncode == 0, "the machine can still start processes"


def test_the_engines_the_agent_started_are_reachable_and_nothing_else(tmp_path: Path) -> None:
    """Loopback relays: the command reaches a managed engine's port and no other port of the host."""
    servers = []
    for _ in range(2):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    managed, other = (server.server_address[1] for server in servers)
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(tmp_path)
    context.settings.allowed_write_roots = [work]
    engine = psutil.Process()  # any live process stands for the engine; only its port matters here
    context.state.processes.append(
        ProcessRecord(
            name="engine-1",
            pid=engine.pid,
            create_time=engine.create_time(),
            argv=["engine"],
            kind="engine",
            port=managed,
            log_path=str(tmp_path / "e.log"),
            state="ready",
        )
    )
    command = (
        f"curl -s -o /dev/null -w '%{{http_code}}' -m 5 http://127.0.0.1:{managed}/; echo; "
        f"curl -s -m 5 http://127.0.0.1:{other}/ || echo unreachable"
    )
    try:
        result = ToolRegistry([ShellTool()]).execute("shell", {"command": command}, context)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    assert result.ok and result.output is not None, result.error
    assert result.output["stdout"].split() == ["200", "unreachable"], result.output
