"""The hand-over note reads like an engineer's: hardware, software, what was tried, benchmarks, questions."""

from __future__ import annotations

from pathlib import Path

from agent.actions import Ask
from agent.escalation import record_question
from agent.render import render_report, render_status
from agent.state import ProjectState
from tools.hosts.base import GpuInfo
from tools.records import BenchmarkRecord, ProcessRecord


def _state() -> ProjectState:
    state = ProjectState(goal="serve kimi with eagle3", policy="runbook")
    state.environment.probed_at = "2026-01-01T00:00:00+00:00"
    state.environment.gpus = [
        GpuInfo(index=index, name="RTX PRO 6000", compute_capability="12.0", memory_total_mib=98304)
        for index in range(2)
    ]
    state.environment.interconnect = "pcie"
    state.environment.packages = {"sglang": "0.5.8", "vllm": None}
    state.model.name, state.model.num_layers = "Kimi-K2.5", 61
    state.add_finding("fa3 attention crashed", ["RuntimeError: unsupported architecture sm_120"])
    state.upsert_task("t1", "baseline benchmark", "done")
    state.processes.append(
        ProcessRecord(
            name="engine",
            pid=4242,
            create_time=1.0,
            argv=["python"],
            log_path="/logs/engine.log",
            port=30000,
            state="ready",
        )
    )
    baseline = {"single_stream_tok_s": 63.6, "peak_tok_s": 2370.0}
    eagle = {"single_stream_tok_s": 92.25, "acceptance_length": 2.9}
    state.benchmarks = [
        BenchmarkRecord(id="b1", label="baseline", metrics=baseline),
        BenchmarkRecord(id="b2", label="eagle3", metrics=eagle),
    ]
    state.next_steps = ["train a drafter on regenerated data"]
    record_question(state, Ask(question="Use GPU 3?", evidence=["Xid 79"], hypothesis="hardware fault"))
    return state


def test_status_note_has_every_section(tmp_path: Path) -> None:
    text = render_status(_state(), tmp_path, holder_pid=99)
    for heading in (
        "## Hardware",
        "## Software",
        "## Model",
        "## What was tried and what happened",
        "## Tasks",
        "## What runs now",
        "## Benchmarks",
        "## Open questions",
        "## Next steps",
    ):
        assert heading in text
    assert "agent PID 99 is running it now" in text
    assert "GPU 1: RTX PRO 6000, compute capability 12.0, 96 GiB" in text and "Interconnect: pcie" in text
    assert "- vllm: not installed" in text and "- layers: 61" in text
    assert "`RuntimeError: unsupported architecture sm_120`" in text
    assert "engine (process): ready, PID 4242, port 30000" in text
    assert "| benchmark | single_stream_tok_s | peak_tok_s | acceptance_length |" in text
    assert "| eagle3 (`b2`) | 92.25 |  | 2.9 |" in text
    assert f'agent ask --answer "..." --id q1 --state-dir {tmp_path}' in text
    assert "1. train a drafter on regenerated data" in text


def test_a_fresh_state_renders_without_facts(tmp_path: Path) -> None:
    text = render_status(ProjectState(goal="g"), tmp_path)
    assert "Not probed yet." in text and "Nothing yet." in text and "None." in text


def test_report_shows_the_outcome_and_what_to_do(tmp_path: Path) -> None:
    state = _state()
    state.status = "blocked"
    report = render_report(state, tmp_path)
    assert report.startswith("BLOCKED: serve kimi with eagle3")
    assert "Use GPU 3?" in report and f"agent resume {tmp_path}/latest.json" in report


def test_a_run_left_running_by_a_crash_says_how_to_resume(tmp_path: Path) -> None:
    text = render_status(ProjectState(goal="g", status="running"), tmp_path)
    assert f"no agent is running it: it stopped unexpectedly; `agent resume {tmp_path}/latest.json`" in text
