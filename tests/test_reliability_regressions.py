"""Regression tests for the bugs the reliability suite found (see docs/reliability.md, "Bugs found").

Each test reproduces the failure deterministically through the same boundary the suite met it at.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import agent_environment, journal_records, run_agent, write_script
from support.reliability import kill_state_processes

from agent.actions import ToolCall
from agent.journal import Journal
from agent.recovery import recover_pending_step
from agent.state import PendingStep, ProjectState
from agent.store import read_state
from tools.base import ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.local import LocalHost
from tools.processes import SPAWN_MARKER, reconcile_processes, stop_process
from twin.loader import ScenarioError, load_scenario, resolve_scenario_path


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "state"
    yield directory
    kill_state_processes(directory)


def test_answering_a_budget_question_does_not_relaunch_a_verified_engine(state_dir: Path) -> None:
    """Found by the kill-and-resume chain: an answer to the loop's budget question ("extend 4") made the
    runbook relaunch the engine when the budget ran out in its benchmark phase, so every extension was
    spent on a stop, a launch and a correctness check, and the run never reached done."""
    blocked = run_agent(
        "run",
        "--goal",
        "serve the model",
        "--sim",
        "h100-healthy",
        "--policy",
        "runbook",
        "--max-steps",
        "4",
        "--state-dir",
        state_dir,
        timeout=120,
    )
    for _ in range(8):  # (one more step at a time if a busy port cost a launch) until it stops in the bench phase
        assert blocked.returncode == 3, blocked.stderr[-2000:]
        before = json.loads((state_dir / "latest.json").read_text())
        if before["loop"]["policy_state"]["runbook"]["phase"] == "bench":
            break
        blocked = run_agent("resume", state_dir / "latest.json", "--answer", "extend 1", timeout=120)
    assert before["loop"]["policy_state"]["runbook"]["phase"] == "bench"
    assert {question["kind"] for question in before["questions"]} == {"limit"}
    launches_before = _launches(state_dir)

    resumed = run_agent("resume", state_dir / "latest.json", "--answer", "extend 100", timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = json.loads((state_dir / "latest.json").read_text())
    assert _launches(state_dir) == launches_before, "the engine was launched again after the budget answer"
    assert len(after["loop"]["policy_state"]["runbook"]["attempts"]) == launches_before
    assert [record["label"] for record in after["benchmarks"]] == ["baseline single-stream", "baseline peak"]


def _launches(state_dir: Path) -> int:
    return sum(
        1
        for entry in journal_records(state_dir)
        if entry.get("kind") == "intent" and entry.get("tool") == "launch_engine"
    )


# Saves a state, then starts a sleeper through start_process with a checkpoint that SIGKILLs this very
# process: the agent dies exactly between spawning a process and recording it.
_DIE_BEFORE_RECORDING = """
import os, signal, sys
from pathlib import Path
from agent.state import ProjectState
from agent.store import StateStore
from tools.base import ToolContext, ToolSettings
from tools.hosts.local import LocalHost
from tools.processes import start_process

state_dir, sleeper = Path(sys.argv[1]), sys.argv[2]
state = ProjectState(goal="spawn, then die before saving", run_id=sys.argv[3])
StateStore(state_dir).save(state)
context = ToolContext(state=state, state_dir=state_dir, host=LocalHost(exit_dir=state_dir / "exits"),
                      settings=ToolSettings(engine_python=sys.executable),
                      checkpoint=lambda: os.kill(os.getpid(), signal.SIGKILL))
start_process(context, name="engine-1", argv=[sys.executable, sleeper, "orphan"], kind="engine", port=30000)
"""


def _die_before_recording(state_dir: Path, run_id: str) -> None:
    sleeper = Path(__file__).parent / "support" / "fakes" / "sleeper.py"
    died = subprocess.run(
        [sys.executable, "-c", _DIE_BEFORE_RECORDING, str(state_dir), str(sleeper), run_id],
        env=agent_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr


def test_a_process_spawned_just_before_a_kill_is_adopted_on_resume_and_can_be_stopped(tmp_path: Path) -> None:
    """Found by the kill-and-resume chain: a SIGKILL between spawning an engine and saving the state left
    the engine running unrecorded; the resumed run launched a second engine beside it."""
    state_dir = tmp_path / "state"
    _die_before_recording(state_dir, "run-ours")
    saved = read_state(state_dir / "latest.json")
    assert saved.processes == [], "the kill came before the record was saved"
    host = LocalHost(exit_dir=state_dir / "exits")
    try:
        notes = reconcile_processes(saved, host)
        [record] = saved.processes
        assert (record.name, record.kind, record.port, record.state) == ("engine-1", "engine", 30000, "unknown")
        assert any("never recorded; adopted" in note for note in notes)
        assert host.status(record.pid, record.create_time).alive
        outcome = stop_process(record, host, grace_seconds=5)
        assert outcome.stopped and outcome.sent_sigterm
    finally:
        kill_state_processes(state_dir)


def test_a_marked_process_of_another_run_is_not_adopted(tmp_path: Path) -> None:
    other_dir, state_dir = tmp_path / "other", tmp_path / "state"
    _die_before_recording(other_dir, "run-theirs")
    try:
        state = ProjectState(goal="mine", run_id="run-ours")
        reconcile_processes(state, LocalHost(exit_dir=state_dir / "exits"))
        assert state.processes == []
    finally:
        for found in LocalHost().find_marked(SPAWN_MARKER):
            if '"run-theirs"' in found.value:
                os.killpg(found.pid, signal.SIGKILL)


@pytest.mark.parametrize("value", ["inf", "nan", "1e309"])
def test_a_scenario_with_an_infinite_number_is_refused_when_loaded(value: str, tmp_path: Path) -> None:
    """Found by fuzzing the scenario loader: ``size_gb = 1e309`` loaded, then building the simulated host
    failed with OverflowError (cannot convert float infinity to integer) instead of a ScenarioError."""
    text = resolve_scenario_path("h100-healthy").read_text(encoding="utf-8")
    assert "\nsize_gb = " in text
    path = tmp_path / "scenario.toml"
    path.write_text(re.sub(r"\nsize_gb = [^\n]+", f"\nsize_gb = {value}", text), encoding="utf-8")
    with pytest.raises(ScenarioError, match="size_gb"):
        load_scenario(str(path))


def test_an_invalid_filter_regex_is_a_clear_tail_log_error(tmp_path: Path) -> None:
    """Found by fuzzing tool arguments: ``filter="("`` with ``regex=true`` surfaced as an internal failure
    ("tail_log failed: error: missing ), unterminated subpattern ... (traceback in ...)")."""
    log = tmp_path / "engine.log"
    log.write_text("RuntimeError: CUDA error: out of memory\n", encoding="utf-8")
    context = ToolContext(
        state=ProjectState(goal="tail"),
        state_dir=tmp_path,
        host=LocalHost(exit_dir=tmp_path),
        settings=ToolSettings(engine_python=sys.executable, readable_log_dirs=[tmp_path]),
    )
    result = default_registry().execute("tail_log", {"path": str(log), "filter": "(", "regex": True}, context)
    assert not result.ok and result.error is not None
    assert result.error.startswith("filter is not a valid regular expression") and "traceback" not in result.error


def test_a_crash_during_recovery_does_not_journal_a_second_result(tmp_path: Path) -> None:
    """Found by the kill-and-resume chain: recovery journals the "interrupted" result of the call that was
    running, but the state holding it is saved later; a kill in between made the next resume journal a
    second result for the same call."""
    journal = Journal(tmp_path / "journal.jsonl")
    state = ProjectState(goal="recover twice", step=3)
    call = ToolCall(id="runbook-3-launch_engine", tool="launch_engine")
    state.loop.pending = PendingStep(step=3, actions=[call])
    journal.record("decision", step=3, thought="", actions=[call.model_dump(mode="json")])
    journal.record("intent", step=3, call_id=call.id, tool=call.tool, arguments={})
    saved = state.model_dump_json()
    for _ in range(2):  # the first recovery's state is never saved: the agent was killed right after it
        recovered = ProjectState.model_validate_json(saved)
        notes = recover_pending_step(recovered, journal)
        assert [note.split(")")[-1].strip() for note in notes] == ["interrupted"]
        assert recovered.loop.pending is not None and recovered.loop.pending.results[call.id].interrupted
    results = [entry for entry in journal.records() if entry["kind"] == "result"]
    assert [(entry["call_id"], entry["interrupted"]) for entry in results] == [(call.id, True)]


def test_a_lock_file_that_cannot_be_written_is_not_a_traceback(tmp_path: Path) -> None:
    """Found by the full-disk test: writing the holder's PID into agent.lock raised ENOSPC uncaught, so
    ``agent resume`` on a full disk died with a traceback instead of the clear state-write error. Here
    RLIMIT_FSIZE=0 makes every write fail (EFBIG), the lock's first."""
    state_dir = tmp_path / "state"
    script = write_script(tmp_path / "plan.json", [{"ask": "go?"}, {"finish": "done"}])
    assert run_agent("run", "-g", "g", "--script", script, "--state-dir", state_dir).returncode == 3
    before = (state_dir / "latest.json").read_bytes()

    def no_writes() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    refused = subprocess.run(
        [sys.executable, "-m", "agent", "resume", str(state_dir), "--answer", "yes"],
        capture_output=True,
        text=True,
        env=agent_environment(),
        preexec_fn=no_writes,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.startswith("agent: error: cannot write the state") and "File too large" in refused.stderr
    assert (state_dir / "latest.json").read_bytes() == before
