"""The shell tool: commands run in the sandbox; outside it only with an approval (the guard explains the
command to the human); without a sandbox only read-only diagnostics run; timeouts kill everything."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from support.tool_context import fake, make_context, wait_for

from agent.actions import Ask
from agent.escalation import answer_question, record_question
from tools.base import NeedsApproval, ToolContext, ToolRegistry, ToolResult
from tools.hosts.base import CommandResult
from tools.hosts.local import LocalHost
from tools.processes import start_process, stop_process
from tools.shell.tool import ShellTool


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    context = make_context(tmp_path)
    context.settings.allowed_write_roots = [work]
    return context


@pytest.fixture
def foreign() -> Iterator[subprocess.Popen[bytes]]:
    """A process the agent did not start (the test did)."""
    marker = f"opsloop-foreign-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    process.marker = marker  # type: ignore[attr-defined]
    yield process
    process.kill()
    process.wait()


class GuardedHost(LocalHost):
    """A real host that runs only the guard's own look-ups (pgrep): should the guard ever let a
    destructive test command through, it fails the test instead of running it."""

    def run(self, argv: list[str], **options: Any) -> CommandResult:
        if argv and argv[0] == "pgrep":
            return super().run(argv, **options)
        raise AssertionError(f"the guard let this through: {argv}")


def shell(context: ToolContext, command: str, **extra: object) -> ToolResult:
    return ToolRegistry([ShellTool()]).execute("shell", {"command": command, **extra}, context)


DESTRUCTIVE = [
    "rm -rf /",
    "rm -rf /*",
    "sudo rm -rf --no-preserve-root /",
    "rm -r -f ~",
    "rm -fr $HOME",
    "rm -Rf ~/",
    "rm -rf {state}",
    "rm -rf {state}/..",
    "cd /tmp && rm -rf /usr",
    "ls; rm --recursive /etc",
    "bash -c 'rm -rf /'",
    'sh -c "echo hi; rm -rf ~"',
    "echo $(rm -rf /)",
    "echo `rm -rf ~`",
    "find / -delete",
    "find ~ -name '*.log' -exec rm -f {} +",
    "rm -rf $OPSLOOP_UNSET_VARIABLE/",
    "timeout 5 nohup rm -rf /",
    "env FOO=1 rm -rf ~",
    "ls\nrm -rf /",
    "ssh node2 'sudo rm -rf /'",
    "find . -name x | xargs rm -rf",
    "mkfs.ext4 /dev/sdb1",
    "mkfs -t xfs /dev/nvme1n1",
    "wipefs -a /dev/sdc",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "cat disk.img > /dev/nvme0n1",
    "echo x | sudo tee /dev/sdb",
    "shutdown -h now",
    "sudo reboot",
    "systemctl poweroff",
    "init 6",
    "halt",
    "poweroff",
    "nvidia-smi -r -i 0",
    "sudo nvidia-smi --gpu-reset -i 3",
    "sudo rmmod nvidia_uvm nvidia",
    "modprobe -r nvidia",
    "echo 1 > /sys/bus/pci/devices/0000:3b:00.0/reset",
    "cd {state}/.. && git clean -fdx",
    "kill -9 -1",
    "kill -- -1",
    "kill -9 $(pgrep python)",
    "pgrep sglang | xargs kill -9",
    "kill $PID",
]


@pytest.mark.parametrize("template", DESTRUCTIVE)
def test_destructive_commands_asked_outside_the_sandbox_escalate_with_the_guards_reading(
    context: ToolContext, template: str
) -> None:
    command = template.replace("{state}", str(context.state_dir))
    context.host = GuardedHost(exit_dir=context.state_dir / "exits")
    with pytest.raises(NeedsApproval) as raised:
        shell(context, command, outside_sandbox="the task needs it")
    evidence = raised.value.evidence
    assert evidence[0] == f"command: {command}" and "needs: the task needs it" in evidence
    assert any(line.startswith("guard: ") and "no known destructive pattern" not in line for line in evidence)
    assert raised.value.options == ["approve", "deny"]
    assert context.state_dir.exists()


def test_killing_processes_the_agent_did_not_start_is_explained_to_the_human(
    context: ToolContext, foreign: subprocess.Popen[bytes]
) -> None:
    marker = foreign.marker  # type: ignore[attr-defined]
    context.host = GuardedHost(exit_dir=context.state_dir / "exits")
    for command in (
        f"kill -9 {foreign.pid}",
        f"kill -TERM -- -{foreign.pid}",
        f"pkill -f {marker}",
        f"sudo pkill -9 -f {marker}",
        f"killall {Path(sys.executable).name}",
    ):
        with pytest.raises(NeedsApproval) as raised:
            shell(context, command, outside_sandbox="signals a process")
        assert any("not start" in line for line in raised.value.evidence)
    assert foreign.poll() is None


def test_without_a_sandbox_only_read_only_diagnostics_run_unasked(context: ToolContext) -> None:
    context.settings.shell_sandbox = "off"
    for command in ("echo hello", "ps -e | grep -c python", "df -h /", "uname -a"):
        result = shell(context, command)
        assert result.ok and result.output is not None, result.error
        assert result.output["confinement"] == "read-only allow-list (no sandbox)"
    for command in ("touch x", "rm -rf ~", "cat /etc/shadow", "bash -lc 'id'", "python3 -c 'print(1)'"):
        with pytest.raises(NeedsApproval) as raised:
            shell(context, command)
        assert "no sandbox here" in raised.value.reason
    assert not (context.settings.allowed_write_roots[0] / "x").exists()


SAFE = [
    "echo hello",
    "ls -la",
    "rm -rf ./build",
    "rm -rf build/*",
    "rm build/a.txt",
    "echo 'rm -rf /'",
    "grep -c shutdown notes.txt",
    "dd if=/dev/zero of=out.bin bs=1k count=1",
    "cat notes.txt > /dev/null",
    "echo reboot >> notes.txt",
    "kill -l",
    "find build -name '*.txt'",
    "FOO=1 env | grep -c FOO",
    "pkill -f opsloop-no-such-process-{marker}",
]


@pytest.mark.parametrize("command", SAFE)
def test_safe_commands_run(context: ToolContext, command: str) -> None:
    work = context.settings.allowed_write_roots[0]
    (work / "build").mkdir()
    (work / "build" / "a.txt").write_text("x")
    (work / "notes.txt").write_text("no shutdown here\n")
    result = shell(context, command.replace("{marker}", uuid.uuid4().hex))
    assert result.ok, result.error
    assert result.output is not None and result.output["exit_code"] in (0, 1)


def test_output_and_files_are_real(context: ToolContext) -> None:
    work = context.settings.allowed_write_roots[0]
    (work / "build").mkdir()
    result = shell(context, "echo hello && rm -rf build && ls")
    assert result.ok and result.output is not None
    assert result.output["stdout"] == "hello\n" and not (work / "build").exists()
    failed = shell(context, "ls /no/such/path")
    assert failed.ok and failed.output is not None
    assert failed.output["exit_code"] != 0 and "No such file" in failed.output["stderr"]


def test_the_agents_own_processes_are_out_of_the_sandboxs_reach_too(context: ToolContext) -> None:
    """A fresh PID namespace: kill inside the sandbox reaches no process outside it (stop_engine does)."""
    record = start_process(context, name="sleeper", argv=[sys.executable, fake("sleeper.py")])
    try:
        result = shell(context, f"kill -TERM {record.pid}")
        assert result.ok and result.output is not None and result.output["exit_code"] != 0
        assert "No such process" in result.output["stderr"] and result.output["hint"]
        assert context.host.status(record.pid, record.create_time).alive
    finally:
        stop_process(record, context.host, grace_seconds=2)


def test_timeout_kills_every_process_of_the_command(context: ToolContext) -> None:
    duration = f"30.{uuid.uuid4().int % 10**9}"  # a command line no other test has
    result = shell(context, f"sleep {duration} & setsid sleep {duration} & sleep {duration}", timeout_seconds=0.5)
    assert result.ok and result.output is not None and result.output["timed_out"]

    def left() -> list[psutil.Process]:
        return [
            process
            for process in psutil.process_iter(["cmdline"])
            if process.info["cmdline"] == ["sleep", duration] and process.status() != psutil.STATUS_ZOMBIE
        ]

    assert wait_for(lambda: not left())


def test_long_output_is_capped_and_saved_in_full(context: ToolContext) -> None:
    result = shell(context, "seq 1 20000")
    assert result.ok and result.truncated and result.full_output_path is not None
    assert "20000" in Path(result.full_output_path).read_text()


def test_an_approved_command_runs_once(context: ToolContext, foreign: subprocess.Popen[bytes]) -> None:
    command = f"kill -9 {foreign.pid}"
    with pytest.raises(NeedsApproval) as raised:
        shell(context, command, outside_sandbox="signals a process the agent did not start")
    request = raised.value
    record_question(
        context.state,
        Ask(
            question=f"shell needs approval: {request.reason}",
            evidence=request.evidence,
            options=request.options,
            question_kind="approval",
            approval_word="approve",
        ),
    )
    answer_question(context.state, "approve")
    result = shell(context, command, outside_sandbox="signals a process the agent did not start")
    assert result.ok and result.output is not None and result.output["approved_by_question"] == "q1"
    assert foreign.wait(timeout=5) == -9
    with pytest.raises(NeedsApproval):
        shell(context, command, outside_sandbox="signals a process the agent did not start")


def test_a_denied_command_stays_blocked(context: ToolContext) -> None:
    with pytest.raises(NeedsApproval) as raised:
        shell(context, "rm -rf ~", outside_sandbox="cleans up")
    record_question(
        context.state,
        Ask(
            question="shell needs approval",
            evidence=raised.value.evidence,
            question_kind="approval",
            approval_word="approve",
        ),
    )
    answer_question(context.state, "deny")
    with pytest.raises(NeedsApproval):
        shell(context, "rm -rf ~", outside_sandbox="cleans up")


def test_unparsable_commands_fail_in_the_shell_and_bad_directories_are_errors(context: ToolContext) -> None:
    unbalanced = shell(context, "echo 'unterminated")
    assert unbalanced.ok and unbalanced.output is not None and unbalanced.output["exit_code"] != 0
    nowhere = shell(context, "ls", cwd="/no/such/dir")
    assert not nowhere.ok and "does not exist" in (nowhere.error or "")


def test_secrets_in_output_are_redacted(context: ToolContext) -> None:
    secret = "sk-ant-" + "a1b2c3d4e5f6g7h8i9j0" * 2
    result = shell(context, f"echo {secret}", cwd=str(os.getcwd()))
    assert result.ok and result.output is not None
    assert secret not in result.output["stdout"] and secret not in result.output["command"]


def _group_members(group: int) -> list[int]:
    return [process.pid for process in psutil.process_iter() if _pgid(process.pid) == group]


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
