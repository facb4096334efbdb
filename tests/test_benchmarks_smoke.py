"""One quick run of each benchmark script with tiny parameters, so they keep working.

Each script runs as a person runs it (``python -m benchmarks.NAME``) and must print exactly one JSON
line with its figures. Timings are not checked (they depend on the machine); keys, counts and the
things a run must get right are.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import cluster
from support.cli import agent_environment

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_benchmark(name: str, *arguments: str, timeout: float = 120.0) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *arguments],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=agent_environment(),
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout[-2000:]
    document: dict[str, Any] = json.loads(lines[0])
    assert document["benchmark"] == name
    assert document["machine"]["cpu_cores"] >= 1
    return document


def test_loop_overhead_reports_each_checkpoint() -> None:
    result = run_benchmark("loop_overhead", "--checkpoints", "3,12", "--window", "3")
    assert [report["step"] for report in result["checkpoints"]] == [3, 12]
    small, large = result["checkpoints"]
    assert small["steps_in_window"] == large["steps_in_window"] == 3
    assert large["state_bytes"] > small["state_bytes"] > 0  # the document grows with the steps
    for report in result["checkpoints"]:
        assert report["saves_per_step"] >= 2  # the decision and the step's end are always saved
        assert report["overhead_per_step"]["median_ms"] > 0 and report["save"]["count"] > 0
        assert report["save"]["median_ms"] <= report["save"]["p99_ms"]
    assert result["overhead_ratio"]["denominator_step"] == 3 and result["overhead_ratio"]["wall"] > 0
    assert isinstance(result["save_median"]["met"], bool)


def test_prompt_size_counts_every_model_call() -> None:
    result = run_benchmark("prompt_size", "--steps", "12", "--checkpoints", "4,12", "--window", "4")
    assert result["exit_event"] == "done" and result["rejected_requests"] == 0
    assert result["model_calls"] == 13  # one call per step, and the one that finishes
    assert [window["step"] for window in result["windows"]] == [4, 12]
    assert all(window["min_tokens"] <= window["median_tokens"] <= window["max_tokens"] for window in result["windows"])
    assert result["windows"][1]["median_tokens"] > result["windows"][0]["median_tokens"]  # below the budget: grows
    assert result["usage_input_tokens"] > 0 and result["ratio"]["value"] > 1


def test_logs_compares_tail_and_diagnosis_with_gnu_tools() -> None:
    result = run_benchmark("logs", "--sizes-gb", "0.002,0.004", "--scan-mb", "1", "--repeats", "2")
    assert result["scaled"] is None and len(result["files"]) == 2
    for item in result["files"]:
        assert item["diagnose"]["class"] == "cuda_oom"  # the crash at the end of the synthetic log
        assert item["grep"]["matching_lines"] >= 1
        assert item["tail"]["tool_ms"] > 0 and item["tail"]["gnu_tail_ms"] > 0
    assert result["scan"]["diagnose_class"] == "cuda_oom" and result["grep_patterns"] > 10
    assert result["tail_target"]["max_ratio_vs_gnu_tail"] == 2.0


def test_bench_client_measures_cpu_rate_and_accuracy() -> None:
    result = run_benchmark(
        "bench_client",
        "--reference",
        "skip",
        "--requests",
        "4",
        "--long-tokens",
        "24",
        "--short-tokens",
        "4",
        "--many-requests",
        "12",
        "--rate-requests",
        "24",
        "--accuracy-requests",
        "4",
        "--accuracy-tokens",
        "12",
        "--ttft-ms",
        "10",
    )
    ours = result["opsloop"]
    assert ours["cpu"]["failed_requests"] == 0
    assert [run["output_tokens"] for run in ours["cpu"]["runs"]] == [4 * 24, 4 * 4, 12 * 4]
    assert ours["rate"]["completed"] == 24 and ours["rate"]["request_throughput"] > 0
    accuracy = ours["accuracy"]
    assert accuracy["completed"] == 4 and accuracy["output_tokens"] == 4 * 12
    assert accuracy["server_ttft_ms_median"] >= 10  # the server waits at least as long as it was told
    assert accuracy["ttft_median_ms"] >= accuracy["server_ttft_ms_median"]  # the client sees it later, not sooner
    assert result["sglang"] == {"skipped": "--reference skip"} and "comparison" not in result


def test_twin_reports_a_blocked_scenario() -> None:
    result = run_benchmark("twin", "--scenarios", "gpu-fault", "--timeout", "90")
    [run] = result["runs"]
    assert run["scenario"] == "gpu-fault" and run["exit_code"] == 3 and run["outcome"] == "blocked"
    assert run["status"] == "blocked" and run["question_kind"] == "hardware" and run["steps"] >= 1
    assert result["all_ended"] is True


def test_ssh_reports_first_and_later_calls_and_the_log_reads() -> None:
    missing = cluster.unavailable()
    if missing is not None:
        pytest.skip(f"no namespaced sshd hosts here: {missing}")
    result = run_benchmark("ssh", "--log-gb", "0.01", "--calls", "3", timeout=300)
    assert "skipped" not in result, result["skipped"]  # this machine can build them
    assert result["first"]["connection_up"]["count"] == 3 and result["first"]["helper_install_ms"] > 0
    for name in ("next_shell_true", "next_tail_small", "tail_big", "diagnose_big", "cli_tail_small"):
        assert result[name]["ssh"]["count"] >= 3 and result[name]["ratio"] > 0
    assert result["log_bytes"]["big"] > 9 * 10**6  # about --log-gb, whole lines
