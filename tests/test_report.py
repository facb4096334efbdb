"""`agent report` and the closing report's figures, on state documents and journals written by the real store."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from support.cli import run_agent

from agent.render import benchmark_table, render_report
from agent.report.build import build_report
from agent.report.configurations import change, configuration_name
from agent.report.records import gather
from agent.state import ProjectState
from agent.store import StateStore
from tools.records import BenchmarkRecord

DRAFTER = {"algorithm": "EAGLE3", "draft_model_path": "/runs/state/drafters/drafter-4/export-sglang"}


def level(concurrency: int, throughput: float, accept: float | None = None) -> dict[str, Any]:
    distribution = {"mean": 20.0, "median": 18.0, "p90": 30.0, "p99": 41.5, "count": 10}
    return {
        "concurrency": concurrency,
        "num_requests": 10,
        "completed": 10,
        "failed": 0,
        "duration_seconds": 2.0,
        "request_throughput": 5.0,
        "input_tokens": 1000,
        "output_tokens": 640,
        "output_throughput": throughput,
        "total_throughput": throughput * 2,
        "token_counts_from": "usage",
        "ttft_ms": distribution,
        "itl_ms": distribution,
        "tpot_ms": distribution,
        "e2e_ms": distribution,
        "spec": None if accept is None else {"source": "sglang_counters", "accept_length": accept, "per_run": True},
    }


def bench(number: int, label: str, speculative: dict[str, Any] | None, *levels: dict[str, Any]) -> BenchmarkRecord:
    config = {"engine": "sglang", "model_path": "/models/m", "speculative": speculative}
    return BenchmarkRecord(
        id=f"bench{number}", label=label, engine_config=config, metrics={"client": "opsloop", "levels": list(levels)}
    )


def launch(
    store: StateStore, step: int, config: dict[str, Any], outcome: str, diagnosis: dict[str, Any] | None
) -> None:
    call = f"c{step}"
    store.journal.record("intent", step=step, call_id=call, tool="launch_engine", arguments={"config": config})
    readiness = {"outcome": outcome, "diagnosis": diagnosis}
    output = {"name": f"engine-{step}", "readiness": readiness}
    store.journal.record("result", step=step, call_id=call, tool="launch_engine", result={"ok": True, "output": output})


def test_the_report_reads_benchmarks_and_launches_from_the_journal(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = ProjectState(goal="serve m", status="done", summary="Kept: drafter-4 (faster single-stream).")
    base = {"engine": "sglang", "model_path": "/models/m", "port": 30000}
    launch(store, 1, base, "hung", {"class": "nccl_hang", "key_line": "Init torch distributed begin."})
    launch(store, 2, {**base, "port": 30001, "env": {"NCCL_P2P_DISABLE": "1"}}, "ready", None)
    for number in range(1, 13):  # more than the document keeps: the oldest move to the journal
        speculative = DRAFTER if number > 6 else None
        state.benchmarks.append(bench(number, f"run {number}", speculative, level(1, 40.0 + number, 2.5)))
        store.save(state)
    assert len(state.benchmarks) < 12 and state.history.moved["benchmarks"] > 0

    records = gather(StateStore(tmp_path).load(), tmp_path)
    assert [record.id for record in records.benchmarks] == [f"bench{number}" for number in range(1, 13)]
    assert [(item.outcome, item.diagnosis) for item in records.launches] == [("hung", "nccl_hang"), ("ready", None)]
    report = build_report(StateStore(tmp_path).load(), tmp_path)
    assert [chart.name for chart in report.charts] == ["throughput", "latency", "acceptance"]
    for chart in report.charts:
        assert chart.png.startswith(b"\x89PNG")
        assert base64.b64encode(chart.png).decode() in report.html
    assert "Kept: drafter-4" in report.html and "next attempt: env.NCCL_P2P_DISABLE=1" in report.html
    assert "EAGLE3 drafter-4" in report.html and "bench12" in report.html


def test_configurations_are_named_by_their_drafter() -> None:
    assert configuration_name(bench(1, "b", None)) == "baseline"
    assert configuration_name(bench(2, "s", DRAFTER)) == "EAGLE3 drafter-4"
    offshelf = {"algorithm": "EAGLE3", "draft_model_path": "/models/Kimi-K2-Instruct-eagle3"}
    assert configuration_name(bench(3, "s", offshelf)) == "EAGLE3 Kimi-K2-Instruct-eagle3"
    assert configuration_name(BenchmarkRecord(id="b4", label="by url")) == "by url"
    assert change(None, {"port": 1}) == "first launch"
    assert change({"port": 1}, {"port": 2}) == "port=2"  # a new port alone is the remedy
    assert change({"port": 1, "env": {}}, {"port": 2, "env": {"A": "1"}}) == "env.A=1"


def test_the_closing_report_shows_the_measured_figures_and_names_the_report_command(tmp_path: Path) -> None:
    state = ProjectState(goal="serve m", status="done", summary="served")
    state.benchmarks = [bench(1, "baseline peak", None, level(1, 53.14), level(64, 1971.5))]
    state.benchmarks.append(BenchmarkRecord(id="b2", label="eagle3", metrics={"single_stream_tok_s": 92.25}))
    report = render_report(state, tmp_path)
    first = report.splitlines()[0]
    assert first.startswith("DONE: serve m") and f"agent report {tmp_path} --html {tmp_path}/report.html" in first
    table = benchmark_table(state.benchmarks)
    assert "| baseline peak (`bench1`) | 1 | 10/10 | 53.1 | 18.0 / 41.5 | 18.0 / 41.5 |  |" in table
    assert "| baseline peak (`bench1`) | 64 | 10/10 | 1971.5 |" in table
    assert "| eagle3 (`b2`) | 92.25 |" in table  # figures given as plain metrics keep their own table
    blocked = ProjectState(goal="serve m", status="blocked")
    assert "agent report" not in render_report(blocked, tmp_path).splitlines()[0]


def test_a_run_without_figures_still_gets_a_page_and_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    StateStore(state_dir).save(ProjectState(goal="probe only"))
    made = run_agent("report", state_dir)
    assert made.returncode == 0, made.stderr
    page = (state_dir / "report.html").read_text()
    assert "Nothing was measured" in page and "No engine was launched" in page and not re.search(r"<img", page)
    missing = run_agent("report", tmp_path / "nowhere")
    assert missing.returncode == 2 and "agent: error:" in missing.stderr
    blocked = run_agent("report", state_dir, "--html", state_dir / "latest.json" / "page.html")
    assert blocked.returncode == 2 and "cannot write the report" in blocked.stderr
