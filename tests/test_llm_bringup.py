"""A 20-step bring-up on the twin (`agent run --sim h100-healthy`) driven by the LLM policy over each wire:
Anthropic Messages with thinking, OpenAI Responses with reasoning items, and Chat Completions with
``reasoning_content`` (an SGLang or vLLM server with a reasoning parser). The scripted model plays the
model; the real CLI, loop, tools, twin and SDKs do the rest, and the loopback server refuses every request
a real provider would refuse (changed or missing thinking, reasoning items, reasoning content, ids)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from support.cli import agent_environment, run_agent
from support.runbook import stop_leftovers

from twin.model_api.script import ModelTurn, RecordedRequest, Step, ToolUse
from twin.model_api.server import ModelServer

MODEL_NAME = "Llama-3.3-70B-Instruct"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bringup_calls(state_dir: Path, port: int) -> list[list[ToolUse]]:
    """The twenty turns of a careful bring-up: probe, plan, launch, verify, measure, record, finish."""
    config = {
        "engine": "sglang",
        "model_path": str(state_dir / "sim/h100-healthy/fs/models" / MODEL_NAME),
        "served_model_name": MODEL_NAME,
        "tp_size": 8,
        "port": port,
        "trust_remote_code": True,
    }
    url = f"http://127.0.0.1:{port}"
    bench = {
        "base_url": url,
        "model": MODEL_NAME,
        "num_prompts": 8,
        "input_len": 128,
        "output_len": 32,
        "correctness_probe": False,
    }
    plan = {
        "tasks": [
            {"id": "launch", "title": "Launch SGLang", "status": "in_progress"},
            {"id": "bench", "title": "Benchmark", "status": "pending"},
        ]
    }
    return [
        [ToolUse("probe_system")],
        [ToolUse("update_state", plan)],
        [ToolUse("launch_engine", {"config": config, "poll_seconds": 0.2, "health_every_seconds": 0.5})],
        [ToolUse("engine_status", {"name": "engine"})],
        [ToolUse("tail_log", {"process": "engine", "lines": 20})],
        [ToolUse("diagnose_log", {"process": "engine"})],
        [ToolUse("check_correctness", {"base_url": url, "model": MODEL_NAME})],
        [
            ToolUse(
                "update_state",
                {
                    "findings": [
                        {"summary": "SGLang serves Llama-3.3-70B at TP=8", "evidence": ["check_correctness passed"]}
                    ]
                },
            )
        ],
        [ToolUse("run_bench", {**bench, "concurrency": [1], "label": "single stream"})],
        [ToolUse("run_bench", {**bench, "concurrency": [8], "label": "eight streams"})],
        [ToolUse("update_state", {"tasks": [{"id": "launch", "title": "Launch SGLang", "status": "done"}]})],
        [ToolUse("wait", {"seconds": 0.2, "reason": "let the server settle"})],
        [ToolUse("engine_status", {"name": "engine"})],
        [ToolUse("tail_log", {"process": "engine", "lines": 5})],
        [ToolUse("run_bench", {**bench, "concurrency": [4], "label": "four streams"})],
        [ToolUse("check_correctness", {"base_url": url, "model": MODEL_NAME})],
        [ToolUse("update_state", {"tasks": [{"id": "bench", "title": "Benchmark", "status": "done"}]})],
        [ToolUse("engine_status", {"name": "engine"}), ToolUse("diagnose_log", {"process": "engine"})],
        [ToolUse("update_state", {"next_steps": ["try EAGLE-3 against this baseline"]})],
        [ToolUse("finish", {"summary": "SGLang serves Llama-3.3-70B on 8 GPUs; benchmarks recorded."})],
    ]


def bringup_script(state_dir: Path, port: int) -> list[Step]:
    return [
        ModelTurn(
            thinking=f"Step {index}: the last result says what to do next; {calls[0].name} now.",
            text=f"Step {index}.",
            tool_calls=calls,
        )
        for index, calls in enumerate(bringup_calls(state_dir, port), start=1)
    ]


WIRES: dict[str, dict[str, Any]] = {
    "anthropic": {"args": ["--provider", "anthropic", "--model", "claude-sonnet-5-5"], "server": {}},
    "responses": {"args": ["--provider", "openai", "--model", "gpt-6-sol", "--effort", "medium"], "server": {}},
    "chat-reasoning": {
        "args": ["--provider", "openai", "--model", "Qwen/Qwen3-235B-A22B", "--wire", "chat"],
        "server": {"reasoning_field": "reasoning_content"},
    },
}


def replayed(request: RecordedRequest) -> int:
    """How many pieces of earlier reasoning the request sent back."""
    text = request.all_text()
    return (
        text.count('"type": "thinking"') + text.count('"type": "reasoning"') + text.count('"reasoning_content": "Step')
    )


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_twenty_step_twin_bringup_over_each_wire(wire: str, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    setup = WIRES[wire]
    with ModelServer(bringup_script(state_dir, free_port()), model=setup["args"][3], **setup["server"]) as server:
        base_url = server.anthropic_base_url if wire == "anthropic" else server.openai_base_url
        try:
            result = run_agent(
                "run",
                "--goal",
                "serve Llama-3.3-70B and benchmark it",
                "--sim",
                "h100-healthy",
                *setup["args"],
                "--llm-base-url",
                base_url,
                "--state-dir",
                state_dir,
                "--max-steps",
                "40",
                timeout=240,
                environment=agent_environment(ANTHROPIC_API_KEY="test-key", OPENAI_API_KEY="test-key"),
            )
        finally:
            stop_leftovers(state_dir)  # the served engine outlives the agent by design
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    assert server.rejections == [] and len(requests) == 20
    assert all(request.answer == "turn" for request in requests)
    state = json.loads((state_dir / "latest.json").read_text())
    assert state["status"] == "done" and state["step"] >= 19
    assert [task["status"] for task in state["tasks"]] == ["done", "done"]
    assert len(state["benchmarks"]) >= 3 and any(p["name"] == "engine" for p in state["processes"])
    # Each request answered every call made before it, and sent earlier reasoning back.
    for request in requests[1:]:
        assert set(request.tool_call_ids()) <= {result.call_id for result in request.tool_results()}
    assert replayed(requests[-1]) >= 10
    transcript = (state_dir / "transcript.jsonl").read_text()
    assert "the last result says what to do next" in transcript
