"""Speculative decoding on a real vLLM (CPU build): n-gram acceptance read from the server's /metrics, the
lossless gate (passing for n-gram, catching a configuration that changes the output), and what happens when
such an engine dies: a worker killed after ready, and a process group whose leader is gone."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from support.agent_engine import AgentEngine, end_engines, engine_config, engine_groups, launch_ready
from support.cli import run_agent
from support.real_engine import RealEngine, http_get

from tools.bench.spec import VLLM_ACCEPTED, VLLM_DRAFTS, parse_prometheus

NGRAM = {"algorithm": "NGRAM", "num_steps": 3}


@pytest.fixture(scope="module")
def ngram(real_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentEngine]:
    state_dir = tmp_path_factory.mktemp("ngram") / "state"
    config = engine_config(real_engine, disable_cuda_graph=True, speculative=NGRAM)
    engine = launch_ready(real_engine, state_dir, "ngram", config)
    yield engine
    end_engines(state_dir)


@pytest.fixture(scope="module")
def changes_output(real_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentEngine]:
    """n-gram speculation launched with a default repetition penalty: fast, served, and not the target's output."""
    state_dir = tmp_path_factory.mktemp("broken") / "state"
    config = engine_config(
        real_engine,
        disable_cuda_graph=True,
        speculative=NGRAM,
        extra_flags=["--override-generation-config", json.dumps({"repetition_penalty": 1.5})],
    )
    engine = launch_ready(real_engine, state_dir, "ngram-penalised", config)
    yield engine
    end_engines(state_dir)


def counters(base_url: str) -> dict[str, float]:
    status, text = http_get(f"{base_url}/metrics")
    assert status == 200
    return {name: value for name, labels, value in parse_prometheus(text) if name in (VLLM_ACCEPTED, VLLM_DRAFTS)}


def test_ngram_acceptance_is_read_from_the_real_metrics(ngram: AgentEngine) -> None:
    assert '"method": "ngram"' in " ".join(ngram.output["argv"])
    before = counters(ngram.base_url)
    arguments = {
        "base_url": ngram.base_url,
        "model": ngram.served_model,
        "concurrency": [2],
        "num_prompts": 6,
        "input_len": 64,
        "output_len": 96,
        "warmup_requests": 0,  # so that the counters around the call are the run's own
        "correctness_probe": False,
    }
    document = ngram.tool("run_bench", arguments, timeout=600)
    assert document["ok"], document
    after = counters(ngram.base_url)
    [level] = document["output"]["levels"]
    spec = level["spec"]
    assert (spec["source"], spec["per_run"]) == ("vllm_counters", True)
    drafts = after[VLLM_DRAFTS] - before[VLLM_DRAFTS]
    accepted = after[VLLM_ACCEPTED] - before[VLLM_ACCEPTED]
    assert drafts > 0 and accepted > 0  # the random model loops, so n-gram lookups do land
    assert spec["accept_length"] == pytest.approx(1 + accepted / drafts, abs=0.01)


def test_lossless_gate_passes_for_ngram(ngram: AgentEngine, baseline_reference: list[str]) -> None:
    document = ngram.tool(
        "check_lossless", {"base_url": ngram.base_url, "model": ngram.served_model, "reference": baseline_reference}
    )
    assert document["ok"], document
    verdict = document["output"]["verdict"]
    assert verdict["passed"] and verdict["compared"], verdict["summary"]


def test_lossless_gate_catches_a_configuration_that_changes_the_output(
    changes_output: AgentEngine, baseline_reference: list[str]
) -> None:
    arguments = {"base_url": changes_output.base_url, "model": changes_output.served_model}
    document = changes_output.tool("check_lossless", {**arguments, "reference": baseline_reference})
    verdict = document["output"]["verdict"]
    assert verdict["passed"] is False and "FAILED" in verdict["summary"]
    assert all(item["agreement"] < verdict["min_prefix_fraction"] for item in verdict["prompts"][:1])


def test_a_worker_killed_after_ready_is_reported_dead_by_status_and_diagnose_alike(ngram: AgentEngine) -> None:
    """vLLM's API server exits 0 after its worker dies: the exit code alone does not tell; the log does."""
    [worker] = [process for process in psutil.Process(ngram.pid).children(recursive=True) if _titled(process, "Worker")]
    worker.send_signal(signal.SIGKILL)
    status = _until_exited(ngram)
    assert status["exit_code"] == 0 and status["state"] == "exited"
    diagnosis = status["diagnosis"]
    assert diagnosis["class"] == "process_killed" and "died_after_ready" in diagnosis["findings"]
    assert any("died unexpectedly" in line for line in diagnosis["lines_around"])
    for extra in (["--exit-code", "0"], []):  # without it, the supervisor's last line says how it ended
        completed = run_agent("diagnose", "--json", *extra, ngram.log_path)
        assert json.loads(completed.stdout)["class"] == "process_killed", extra


def test_stopping_ends_the_group_when_its_leader_is_gone(changes_output: AgentEngine) -> None:
    """SIGKILL of the API server leaves its EngineCore and Worker running, re-parented; stop_engine ends them."""
    supervisor = psutil.Process(changes_output.pid)
    [server] = supervisor.children()
    workers = [process for process in server.children(recursive=True) if _titled(process, "")]  # not the tracker
    assert {_title(process) for process in workers} >= {"VLLM::EngineCore", "VLLM::Worker"}
    supervisor.send_signal(signal.SIGKILL)
    server.send_signal(signal.SIGKILL)
    psutil.wait_procs([supervisor, server], timeout=10)
    time.sleep(2)
    survivors = [process for process in workers if process.is_running() and process.status() != psutil.STATUS_ZOMBIE]
    assert survivors and all(process.ppid() != server.pid for process in survivors)

    document = changes_output.tool("stop_engine", {"name": changes_output.name, "grace_seconds": 20})

    assert document["ok"], document
    output = document["output"]
    assert output["stopped"] and "group leader had already exited" in output["message"], output
    assert engine_groups(changes_output.state_dir) == {}


def _title(process: psutil.Process) -> str:
    """The process title (vLLM sets VLLM::EngineCore and VLLM::Worker, padded with spaces)."""
    try:
        return " ".join(process.cmdline()).strip()
    except psutil.Error:
        return ""


def _titled(process: psutil.Process, role: str) -> bool:
    return _title(process).startswith(f"VLLM::{role}")


def _until_exited(engine: AgentEngine, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = engine.status()
        if not status["alive"] or time.monotonic() > deadline:
            return status
        time.sleep(2)
