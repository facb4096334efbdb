"""Hostile input against the guards: patch_file under a live symlink race, a reused PID in the state,
every destructive shell pattern asked to run outside the sandbox, and several agents racing for one state
directory. (The same patterns run inside the sandbox are in test_security_sandbox.py.)

patch_file's single-shot cases (``..``, absolute paths, links pointing out, one swap between check and
write) are in test_patch.py; here a thread swaps the target for a link to a file outside the roots,
and its directory for a link to a directory outside, as fast as it can while patches run, and nothing
outside may ever change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.cli import journal_records, run_agent, start_agent, wait_for, write_script
from support.reliability import heavy

from agent.state import ProjectState
from tools.base import NeedsApproval, ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.base import CommandResult
from tools.hosts.local import LocalHost
from tools.processes import reconcile_processes
from tools.records import ProcessRecord

REGISTRY = default_registry()
SLEEPER = Path(__file__).parent / "support" / "fakes" / "sleeper.py"
OUTSIDE_TEXT = "alpha: outside the writable roots\n"


def _context(tmp_path: Path, roots: list[Path], state: ProjectState | None = None) -> ToolContext:
    state_dir = tmp_path / "state"
    state_dir.mkdir(exist_ok=True)
    return ToolContext(
        state=state or ProjectState(goal="guards"),
        state_dir=state_dir,
        host=LocalHost(exit_dir=tmp_path / "exits"),
        settings=ToolSettings(engine_python=sys.executable, allowed_write_roots=roots),
    )


class Swapper(threading.Thread):
    """Swaps ``target`` between a regular file and a symlink to ``outside``, atomically, until stopped."""

    def __init__(self, target: Path, outside: Path, regular: bytes | None) -> None:
        super().__init__(daemon=True)
        self.target, self.outside, self.regular = target, outside, regular
        self.swaps = 0
        self.stop = threading.Event()

    def run(self) -> None:
        spare = self.target.with_name(f".{self.target.name}.swap")
        while not self.stop.is_set():
            if self.regular is None:  # a directory: step it aside, a link in its place, then put it back
                parked = self.target.with_name(f".{self.target.name}.dir")
                os.rename(self.target, parked)
                self.target.symlink_to(self.outside, target_is_directory=True)
                (parked / "target.txt").write_text("alpha\n")
                self.target.unlink()
                os.rename(parked, self.target)
            else:
                spare.unlink(missing_ok=True)
                spare.symlink_to(self.outside)
                os.replace(spare, self.target)
                spare.write_bytes(self.regular)
                os.replace(spare, self.target)
            self.swaps += 1


@pytest.mark.parametrize("swapped", ["file", "directory"])
def test_patch_file_never_writes_outside_while_the_target_is_swapped_for_links(swapped: str, tmp_path: Path) -> None:
    root, outside_dir = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside_dir.mkdir()
    outside_file = outside_dir / "target.txt"
    outside_file.write_text(OUTSIDE_TEXT)
    target = root / "sub" / "target.txt"
    target.write_text("alpha\n")
    context = _context(tmp_path, [root])
    swapper = (
        Swapper(target, outside_file, b"alpha\n") if swapped == "file" else Swapper(root / "sub", outside_dir, None)
    )
    trials = 5000 if heavy() else 300
    outcomes: dict[str, int] = {}
    swapper.start()
    try:
        for _ in range(trials):
            result = REGISTRY.execute(
                "patch_file", {"path": str(target), "search": "alpha", "replace": "beta"}, context
            )
            error = result.error or ""
            kind = (
                "patched"
                if result.ok
                else "refused"
                if "refused" in error
                else "not found"
                if "does not exist" in error or "matches 0 times" in error
                else error
            )
            outcomes[kind] = outcomes.get(kind, 0) + 1
            assert result.ok or kind in ("refused", "not found"), error
            assert outside_file.read_text() == OUTSIDE_TEXT, "a write went through a symlink"
    finally:
        swapper.stop.set()
        swapper.join(timeout=10)
    assert sorted(path.name for path in outside_dir.iterdir()) == ["target.txt"], "a file appeared outside"
    assert swapper.swaps > 0 and outcomes.get("refused", 0) > 0, outcomes
    print(f"\npatch_file vs {swapped} swaps: {trials} patches, {swapper.swaps} swaps, outcomes {outcomes}")


# -- a reused PID ------------------------------------------------------------------------------------------


@pytest.fixture
def foreign() -> Iterator[subprocess.Popen[bytes]]:
    """A live process the agent did not start (started here, by the test)."""
    process = subprocess.Popen(
        [sys.executable, str(SLEEPER), "foreign"], stdout=subprocess.DEVNULL, start_new_session=True
    )
    assert wait_for(lambda: psutil.Process(process.pid).status() != psutil.STATUS_ZOMBIE)
    yield process
    process.kill()
    process.wait()


def test_a_foreign_process_that_reuses_a_recorded_pid_is_never_signalled(
    tmp_path: Path, foreign: subprocess.Popen[bytes]
) -> None:
    create_time = psutil.Process(foreign.pid).create_time()
    state = ProjectState(goal="pid reuse")
    # The record has the foreign PID but another start time: our engine died and its PID was reused.
    state.processes.append(
        ProcessRecord(
            name="engine-1",
            pid=foreign.pid,
            create_time=create_time - 50.0,
            argv=["python", "-m", "sglang.launch_server"],
            kind="engine",
            port=30000,
            log_path=str(tmp_path / "engine.log"),
            state="ready",
        )
    )
    context = _context(tmp_path, [tmp_path], state)
    status = REGISTRY.execute("engine_status", {"name": "engine-1"}, context)
    stopped = REGISTRY.execute("stop_engine", {"name": "engine-1", "grace_seconds": 0}, context)
    assert stopped.ok and stopped.output is not None and not stopped.output["sent_sigterm"], stopped
    assert "belongs to another process" in stopped.output["message"]
    assert status.ok or "another process" in (status.error or "")
    contained = REGISTRY.execute("shell", {"command": f"kill -9 {foreign.pid}"}, context)
    assert contained.ok and contained.output is not None and contained.output["exit_code"] != 0, contained
    with pytest.raises(NeedsApproval, match="approval"):
        REGISTRY.execute("shell", {"command": f"kill -9 {foreign.pid}", "outside_sandbox": "kill it"}, context)
    state.processes[0].state = "ready"
    notes = reconcile_processes(state, context.host)
    assert any("belongs to another process, which will not be touched" in note for note in notes)
    assert not context.host.signal_group(foreign.pid, create_time - 50.0, signal.SIGKILL)
    assert foreign.poll() is None and psutil.Process(foreign.pid).status() != psutil.STATUS_ZOMBIE


# -- shell guardrails ----------------------------------------------------------------------------------------

DESTRUCTIVE = [
    "rm -rf /",
    "rm -rf /*",
    "rm -rf ~",
    "rm -rf $HOME/",
    "rm -r --no-preserve-root /",
    "rm -rf /usr",
    "sudo rm -rf /var",
    'rm -rf "$UNSET_VARIABLE"/',
    "rm -rf $(cat paths.txt)",
    "cd / && rm -rf *",
    "find / -delete",
    "find ~ -exec rm -rf {} +",
    "ls | xargs rm -rf",
    "mkfs.ext4 /dev/sda1",
    "mkswap /dev/nvme0n1",
    "wipefs -a /dev/sdb",
    "fdisk /dev/sda",
    "parted /dev/nvme0n1 rm 1",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "echo x > /dev/nvme0n1",
    "cat image.iso | tee /dev/sdb",
    "shutdown -h now",
    "reboot",
    "poweroff",
    "halt",
    "systemctl reboot",
    "init 0",
    "nvidia-smi -r -i 0",
    "nvidia-smi --gpu-reset",
    "rmmod nvidia_uvm nvidia",
    "modprobe -r nvidia",
    "echo 1 > /sys/bus/pci/devices/0000:3b:00.0/reset",
    "echo b > /proc/sysrq-trigger",
    "kill -9 1",
    "kill -- -1",
    "pkill -9 python",
    "killall sleep",
    "git clean -fdx",
]


class DryHost(LocalHost):
    """Runs only ``pgrep`` (which the guard asks); any other command is recorded, never executed, so a
    command the guard lets through cannot do harm here."""

    def __init__(self, exit_dir: Path) -> None:
        super().__init__(exit_dir)
        self.commands: list[list[str]] = []

    def run(
        self,
        argv: list[str],
        *,
        timeout: float,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        input_text: str | None = None,
        output_cap_bytes: int = 1_000_000,
    ) -> CommandResult:
        if argv and argv[0] == "pgrep":
            return super().run(
                argv, timeout=timeout, cwd=cwd, env=env, input_text=input_text, output_cap_bytes=output_cap_bytes
            )
        self.commands.append(argv)
        return CommandResult(argv=argv, exit_code=126, stderr="not run: a dry host")


@pytest.fixture(scope="module")
def foreign_sleep() -> Iterator[None]:
    """A foreign ``sleep`` for ``killall sleep`` to hit: the guard judges the processes a kill would reach."""
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield
    process.kill()
    process.wait()


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_every_destructive_pattern_asked_outside_the_sandbox_escalates_and_does_not_run(
    command: str, tmp_path: Path, foreign_sleep: None
) -> None:
    host = DryHost(tmp_path / "exits")
    context = _context(tmp_path, [tmp_path])
    context.host = host
    with pytest.raises(NeedsApproval) as raised:
        REGISTRY.execute("shell", {"command": command, "cwd": str(tmp_path), "outside_sandbox": "asked"}, context)
    assert raised.value.evidence[0] == f"command: {command}"
    assert any(line.startswith("guard: ") and "no known" not in line for line in raised.value.evidence)
    assert raised.value.options == ["approve", "deny"]
    assert host.commands == [], "the guard let a destructive command through to the host"


def test_a_destructive_command_blocks_the_run_until_approved_and_runs_once(
    tmp_path: Path, foreign: subprocess.Popen[bytes]
) -> None:
    state_dir = tmp_path / "state"
    kill = {"tool": "shell", "arguments": {"command": f"kill -9 {foreign.pid}", "outside_sandbox": "stop it"}}
    script = write_script(tmp_path / "plan.json", [kill, kill, kill, {"finish": "done"}])
    blocked = run_agent("run", "-g", "guard", "--script", script, "--state-dir", state_dir)
    assert blocked.returncode == 3, blocked.stderr
    denied = run_agent("resume", state_dir, "--answer", "deny")
    assert denied.returncode == 3 and foreign.poll() is None, "denied, yet the command ran"
    approved = run_agent("resume", state_dir, "--answer", "approve")
    assert approved.returncode == 0, approved.stderr
    assert foreign.wait(timeout=10) == -signal.SIGKILL
    shell_results = [
        entry["result"]
        for entry in journal_records(state_dir)
        if entry["kind"] == "result" and entry["tool"] == "shell"
    ]
    assert [result["ok"] for result in shell_results] == [False, False, True]


# -- one agent per state directory ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "resume"])
def test_agents_racing_for_one_state_directory_exactly_one_runs(command: str, tmp_path: Path) -> None:
    rounds, racers = (10, 6) if heavy() else (1, 4)
    hold = {"tool": "wait", "arguments": {"seconds": 600, "reason": "hold the directory"}}  # ended by the test
    script = write_script(
        tmp_path / "plan.json", [*([{"ask": "ready?"}] if command == "resume" else []), hold, {"finish": "ok"}]
    )
    for round_number in range(rounds):
        state_dir = tmp_path / f"state-{round_number}"
        if command == "resume":
            prepared = run_agent("run", "-g", "race", "--script", script, "--state-dir", state_dir)
            assert prepared.returncode == 3, prepared.stderr
            assert run_agent("ask", "--answer", "go", "--state-dir", state_dir).returncode == 0
            arguments = ["resume", str(state_dir)]
        else:
            arguments = ["run", "-g", "race", "--script", str(script), "--state-dir", str(state_dir)]
        agents = [start_agent(*arguments) for _ in range(racers)]

        def losers_gone(agents: list[subprocess.Popen[str]] = agents) -> bool:
            return sum(agent.poll() is not None for agent in agents) == racers - 1

        def working(state_dir: Path = state_dir) -> bool:
            return any(entry.get("kind") == "intent" for entry in journal_records(state_dir))

        try:
            assert wait_for(losers_gone, timeout=60)
            [winner] = [agent for agent in agents if agent.poll() is None]
            for agent in agents:
                if agent is not winner:
                    _, stderr = agent.communicate()
                    assert agent.returncode == 2 and f"(PID {winner.pid})" in stderr, stderr
            assert wait_for(working)
            starts = [entry for entry in journal_records(state_dir) if entry.get("kind") == "start"]
            assert [entry["pid"] for entry in starts if entry["resumed"] == (command == "resume")] == [winner.pid]
        finally:
            for agent in agents:
                if agent.poll() is None:
                    agent.send_signal(signal.SIGTERM)
                agent.communicate(timeout=30)
