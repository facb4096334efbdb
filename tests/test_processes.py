"""Managed processes: start/record/stop with real processes, and re-adoption after a restart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
from support.tool_context import fake, make_context, wait_for

from agent.state import ProjectState
from tools.hosts.local import LocalHost
from tools.processes import live_processes, reconcile_processes, refresh, start_process, stop_process
from tools.records import ProcessRecord
from tools.redact import MASK


def test_start_records_redacted_env_and_checkpoints(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    checkpoints: list[int] = []
    context.checkpoint = lambda: checkpoints.append(len(context.state.processes))
    record = start_process(
        context,
        name="job",
        argv=[sys.executable, fake("sleeper.py")],
        env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "NCCL_DEBUG": "INFO"},
        port=1234,
    )
    try:
        assert checkpoints == [1]  # saved right after the spawn, with the record in it
        assert record.env == {"HF_TOKEN": MASK, "NCCL_DEBUG": "INFO"}
        assert record.port == 1234 and record.create_time > 0
        assert Path(record.log_path).parent == context.state_dir / "logs"
        assert wait_for(lambda: "sleeper started" in Path(record.log_path).read_text())
        assert refresh(record, context.host).alive
        assert live_processes(context.state) == [record]
    finally:
        stop_process(record, context.host, grace_seconds=2)


def test_stop_uses_sigterm_first(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    record = start_process(context, name="job", argv=[sys.executable, fake("sleeper.py")])
    assert wait_for(lambda: "sleeper started" in Path(record.log_path).read_text())
    outcome = stop_process(record, context.host, grace_seconds=5)
    assert outcome.stopped and outcome.sent_sigterm and not outcome.sent_sigkill
    assert record.state == "stopped" and record.exit_code == -15


def test_stop_escalates_to_sigkill_after_grace(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    argv = [sys.executable, fake("sleeper.py"), "--ignore-term"]
    record = start_process(context, name="stubborn", argv=argv)
    assert wait_for(lambda: "sleeper started" in Path(record.log_path).read_text())
    outcome = stop_process(record, context.host, grace_seconds=0.5, poll_seconds=0.05)
    assert outcome.sent_sigterm and outcome.sent_sigkill and outcome.stopped
    assert record.state == "stopped"
    assert not context.host.status(record.pid, record.create_time).alive


def test_reconcile_readopts_live_and_marks_dead(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    survivor = start_process(context, name="survivor", argv=[sys.executable, fake("sleeper.py")])
    finished = start_process(context, name="finished", argv=[sys.executable, "-c", "raise SystemExit(3)"])
    assert wait_for(lambda: not context.host.status(finished.pid, finished.create_time).alive)
    try:
        saved = ProjectState.model_validate_json(context.state.model_dump_json())
        notes = reconcile_processes(saved, LocalHost(exit_dir=tmp_path / "exits"))  # as after a restart
        by_name = {record.name: record for record in saved.processes}
        assert by_name["survivor"].state == "starting"  # untouched: re-adopted
        assert by_name["finished"].state == "exited" and by_name["finished"].exit_code == 3
        assert any("re-adopted" in note for note in notes) and any("exit code 3" in note for note in notes)
    finally:
        stop_process(survivor, context.host, grace_seconds=2)


def test_reconcile_and_stop_never_touch_a_reused_pid(tmp_path: Path) -> None:
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        created = psutil.Process(stranger.pid).create_time()
        state = ProjectState(goal="t")
        record = ProcessRecord(
            name="engine",
            pid=stranger.pid,
            create_time=created - 10.0,
            argv=["x"],
            log_path=str(tmp_path / "x.log"),
            state="ready",
        )
        state.processes.append(record)
        host = LocalHost(exit_dir=tmp_path)
        notes = reconcile_processes(state, host)
        assert record.state == "exited" and "another process" in notes[0]
        record.state = "ready"
        outcome = stop_process(record, host, grace_seconds=0.2)
        assert not outcome.was_alive and not outcome.sent_sigterm and "another process" in outcome.message
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_stop_ends_the_group_members_left_when_the_leader_is_gone(tmp_path: Path) -> None:
    """As vLLM's EngineCore and Worker outlive a killed API server: the spawned process's children live on in
    its process group after the supervisor (the group leader) and the command are killed; stopping ends them."""
    context = make_context(tmp_path)
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, sys.argv[1]]); time.sleep(600)"
    record = start_process(context, name="engine", argv=[sys.executable, "-c", script, fake("sleeper.py")])
    assert wait_for(lambda: "sleeper started" in Path(record.log_path).read_text())
    supervisor = psutil.Process(record.pid)
    command = supervisor.children()[0]
    supervisor.kill()  # the leader first, so that nobody cleans up after the command
    command.kill()
    assert wait_for(lambda: not context.host.status(record.pid, record.create_time).alive)
    assert wait_for(lambda: len(_group(record.pid)) == 1)
    [orphan] = _group(record.pid)
    assert orphan.ppid() != command.pid  # re-parented, as the real workers are

    outcome = stop_process(record, context.host, grace_seconds=5, poll_seconds=0.05)

    assert outcome.was_alive and outcome.sent_sigterm and outcome.stopped, outcome
    assert str(orphan.pid) in outcome.message
    assert wait_for(lambda: not _group(record.pid))


def _group(pgid: int) -> list[psutil.Process]:
    """Live (not zombie) members of a process group."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process)
        except (psutil.Error, OSError):
            continue
    return members


def test_the_supervisor_ends_workers_the_command_left_behind(tmp_path: Path) -> None:
    """The command exits, once its worker says it ignores SIGTERM (as an engine's workers can), and leaves the
    worker behind: the supervisor ends it (SIGKILL after the grace), says so in the log, and records the command's
    own exit code."""
    context = make_context(tmp_path)
    script = (
        "import subprocess, sys; worker = subprocess.Popen([sys.executable, sys.argv[1], '--ignore-term'],"
        " stdout=subprocess.PIPE, text=True); print('worker', worker.pid, flush=True);"
        " print(worker.stdout.readline().strip(), flush=True); sys.exit(3)"
    )
    record = start_process(context, name="engine", argv=[sys.executable, "-c", script, fake("sleeper.py")])
    log = Path(record.log_path)
    assert wait_for(lambda: "sleeper started" in log.read_text(), timeout=60)
    worker = psutil.Process(int(log.read_text().split("worker ", 1)[1].split()[0]))
    assert wait_for(lambda: not context.host.status(record.pid, record.create_time).alive, timeout=60)
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    assert "terminating 1 leftover worker process(es)" in log.read_text()
    assert context.host.status(record.pid, record.create_time).exit_code == 3
