"""The state document stays a hand-over of fixed size: older entries move to the journal, none is lost,
and documents written before (schema version 1, kept in tests/data/state-v1) are read and continued."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from support.cli import run_agent, write_script

from agent.history import HISTORY_KIND, KEEP
from agent.state import SCHEMA_VERSION, ProjectState, Question
from agent.store import StateStore, read_state
from tools.records import BenchmarkRecord, ProcessRecord

VERSION_1 = Path(__file__).resolve().parent / "data" / "state-v1"


def _history(store: StateStore) -> list[dict[str, Any]]:
    return [entry for entry in store.journal.records() if entry["kind"] == HISTORY_KIND]


def _process(name: str, state: str) -> ProcessRecord:
    return ProcessRecord(name=name, pid=1, create_time=1.0, argv=["x"], log_path="/dev/null", state=state)  # type: ignore[arg-type]


def test_a_long_run_keeps_a_bounded_document_and_the_whole_history_in_the_journal(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = ProjectState(goal="a long run")
    state.add_finding("the root cause: PCIe only", pinned=True)
    sizes = []
    for step in range(1, 601):
        state.step = step
        state.add_finding(f"step {step}: tried something", evidence=[f"line {step}"])
        if step % 10 == 0:
            state.benchmarks.append(
                BenchmarkRecord(
                    id=state.next_id("bench", [item.id for item in state.benchmarks]), label=f"sweep {step}"
                )
            )
        store.save(state)
        sizes.append(store.latest_path.stat().st_size)
    assert max(sizes[300:]) <= max(sizes[100:200]) * 1.1  # no growth after the first hundred steps
    saved = store.load()
    assert saved.findings[0].summary == "the root cause: PCIe only" and saved.findings[0].pinned
    assert saved.findings[-1].summary == "step 600: tried something" and saved.findings[-1].number == 601
    assert len(saved.findings) <= 1 + KEEP["findings"] * 5 // 4 and len(saved.benchmarks) <= 8
    assert saved.benchmarks[-1].id == "bench60"  # ids keep counting after old records left
    moved = [item for entry in _history(store) for item in entry.get("findings", [])]
    numbers = sorted({item["number"] for item in moved} | {finding.number for finding in saved.findings})
    assert numbers == list(range(1, 602))  # every finding is in the document or in the journal
    assert saved.history.moved["findings"] == len(moved)
    status = run_agent("status", tmp_path)
    assert "journal.jsonl" in status.stdout and "(pinned)" in status.stdout


def test_what_is_current_never_leaves_the_document(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = ProjectState(goal="g")
    state.processes = [_process("engine-live", "ready"), *(_process(f"old-{n}", "exited") for n in range(30))]
    state.questions = [
        Question(id="q1", question="still open?"),
        *(Question(id=f"q{n}", question="done", answer="yes") for n in range(2, 40)),
    ]
    store.save(state)
    saved = store.load()
    assert saved.processes[0].name == "engine-live" and len(saved.processes) == 1 + KEEP["processes"]
    assert saved.pending_questions()[0].id == "q1" and saved.next_id("q", [q.id for q in saved.questions]) == "q40"


def test_a_version_1_document_is_migrated_and_its_overflow_moves_to_the_journal(tmp_path: Path) -> None:
    document = json.loads((VERSION_1 / "kimi.json").read_text())
    assert document["schema_version"] == 1 and document["environment"]["simulated_scenario"] == "kimi-sm120"
    many = [
        {"step": n, "summary": f"v1 finding {n}", "evidence": [], "at": "2026-12-01T13:00:00+00:00"} for n in range(200)
    ]
    (tmp_path / "latest.json").write_text(json.dumps({**document, "findings": document["findings"] + many}))
    state = read_state(tmp_path / "latest.json")
    assert state.schema_version == SCHEMA_VERSION == 2
    assert state.run.simulated_scenario == "kimi-sm120" and "simulated_scenario" not in state.environment.model_dump()
    assert [finding.number for finding in state.findings] == list(range(1, 216))
    assert state.history.findings_recorded == 215
    assert all("duration_seconds" in level for record in state.benchmarks for level in record.metrics["levels"])
    store = StateStore(tmp_path)
    store.save(state)
    kept = store.load()
    moved = [item["summary"] for entry in _history(store) for item in entry["findings"]]
    assert len(kept.findings) + len(moved) == 215 and kept.findings[-1].summary == "v1 finding 199"
    assert kept.loop.policy_state["runbook"]["chosen"] == "trained"  # the runbook's memory is intact


def test_agent_status_and_ask_read_version_1_documents(tmp_path: Path) -> None:
    for name in ("kimi", "blocked"):
        directory = tmp_path / name
        directory.mkdir()
        shutil.copy(VERSION_1 / f"{name}.json", directory / "latest.json")
        status = run_agent("status", directory)
        assert status.returncode == 0, status.stderr
        assert "Simulated host: scenario" in status.stdout
    asked = run_agent("ask", tmp_path / "blocked", "--json")
    questions = json.loads(asked.stdout)["questions"]
    assert asked.returncode == 0 and questions and questions[0]["kind"] == "hardware"


def test_a_version_1_run_cut_short_mid_step_resumes_to_its_end(tmp_path: Path) -> None:
    """The v1 document holds a pending step: one call finished, one in flight (journaled intent), one never
    started. Resumed by today's agent, the call in flight is reported interrupted, and the run finishes."""
    directory = tmp_path / "state"
    directory.mkdir()
    document = json.loads((VERSION_1 / "pending.json").read_text())
    script = write_script(tmp_path / "script.json", [{"tool": "probe_system"}] * 3 + [{"finish": "done"}])
    document["run"]["config_overrides"]["script"] = str(script)  # the script's original path is gone
    (directory / "latest.json").write_text(json.dumps(document))
    shutil.copy(VERSION_1 / "pending.journal.jsonl", directory / "journal.jsonl")
    resumed = run_agent("resume", directory, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "done"
    assert "interrupted" in resumed.stderr
    results = {
        entry["call_id"]: entry
        for entry in StateStore(directory).journal.records()
        if entry["kind"] == "result" and entry["step"] == 2
    }
    assert results["d2-1"]["interrupted"] and not results["d2-2"]["interrupted"]
    assert read_state(directory / "latest.json").schema_version == 2
