"""launch_engine / engine_status / stop_engine against real processes speaking HTTP on loopback.

The only fake is at the process boundary: a LocalHost whose translate() runs a stand-in engine script
instead of SGLang/vLLM (FAKE_ENGINE_MODE picks how it behaves).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from support.tool_context import fake, make_context, wait_for

from agent.state import ProjectState
from tools.base import ToolContext, ToolRegistry
from tools.engines.control import EngineStatusTool, StopEngineTool
from tools.engines.launch import LaunchEngineTool
from tools.hosts.local import LocalHost
from tools.processes import reconcile_processes


class EngineStandInHost(LocalHost):
    """Runs tests/support/fakes/engine.py wherever an SGLang or vLLM server was asked for."""

    def translate(self, argv: list[str]) -> list[str]:
        if "sglang.launch_server" in argv:
            return [sys.executable, fake("engine.py"), *argv[argv.index("sglang.launch_server") + 1 :]]
        if Path(argv[0]).name == "vllm" and argv[1:2] == ["serve"]:
            return [sys.executable, fake("engine.py"), "--model", argv[2], *argv[3:]]
        return argv


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    return make_context(tmp_path, host=EngineStandInHost(exit_dir=tmp_path / "exits"))


REGISTRY = ToolRegistry([LaunchEngineTool(), StopEngineTool(), EngineStatusTool()])


def launch(context: ToolContext, mode: str, engine: str = "sglang", **arguments: Any) -> dict[str, Any]:
    config = {
        "engine": engine,
        "model_path": "/models/fake",
        "port": free_port(),
        "mem_fraction": 0.8,
        "env": {"FAKE_ENGINE_MODE": mode},
    }
    arguments = {
        "config": config,
        "engine_version": "0.5.8" if engine == "sglang" else "0.33.0",
        "poll_seconds": 0.1,
        "health_every_seconds": 0.5,
        "hang_after_seconds": 1.5,
        "wait_timeout_seconds": 30,
        **arguments,
    }
    result = REGISTRY.execute("launch_engine", arguments, context)
    assert result.ok, result.error
    assert result.output is not None
    return result.output


def stop(context: ToolContext) -> dict[str, Any]:
    result = REGISTRY.execute("stop_engine", {"grace_seconds": 5}, context)
    assert result.ok, result.error
    assert result.output is not None
    return result.output


def test_launch_waits_for_ready_and_reports_progress(context: ToolContext) -> None:
    progress: list[str] = []
    saved: list[int] = []
    context.progress = progress.append
    context.checkpoint = lambda: saved.append(len(context.state.processes))
    output = launch(context, "ready")
    try:
        readiness = output["readiness"]
        assert readiness["outcome"] == "ready"
        assert "fired up" in readiness["ready_line"] and "-> 200" in readiness["health"]
        assert "loading weights: 100% (64/64 shards)" in readiness["milestones"]
        assert any("KV cache allocated" in line for line in progress)
        assert saved and saved[0] == 1  # saved right after the spawn, with the record
        record = context.state.processes[-1]
        assert record.kind == "engine" and record.state == "ready"
        assert record.config["mem_fraction"] == 0.8 and record.config["engine_version"] == "0.5.8"
        assert "--mem-fraction-static" in record.argv and record.host_argv[1].endswith("fakes/engine.py")
        status = REGISTRY.execute("engine_status", {}, context).output
        assert status is not None and status["alive"] and "-> 200" in status["health"]
        assert status["diagnosis"] is None
    finally:
        stopped = stop(context)
    assert stopped["stopped"] and stopped["sent_sigterm"]
    assert context.state.processes[-1].state == "stopped"


def test_a_dying_engine_returns_early_with_a_diagnosis(context: ToolContext) -> None:
    output = launch(context, "oom")
    readiness = output["readiness"]
    assert readiness["outcome"] == "exited" and readiness["exit_code"] == 1
    assert readiness["diagnosis"]["class"] == "cuda_oom"
    assert "CUDA out of memory" in readiness["diagnosis"]["key_line"]
    assert readiness["waited_seconds"] < 10
    assert context.state.processes[-1].state == "exited"
    assert "cuda_oom" in context.state.findings[-1].summary


def test_a_silent_idle_engine_is_declared_hung(context: ToolContext) -> None:
    output = launch(context, "hang")
    try:
        readiness = output["readiness"]
        assert readiness["outcome"] == "hung"
        assert readiness["quiet_seconds"] >= 1.5
        assert readiness["diagnosis"]["class"] == "nccl_hang"
        assert context.state.processes[-1].state == "hung"
    finally:
        stop(context)


def test_a_slow_silent_load_with_cpu_activity_is_not_a_hang(context: ToolContext) -> None:
    # The hang threshold (1.5 s) is shorter than the engine's silent, CPU-busy stretch (2.5 s).
    output = launch(context, "slow-quiet")
    try:
        readiness = output["readiness"]
        assert readiness["outcome"] == "ready"
        assert "cpu" in readiness["activity_seen"]
    finally:
        stop(context)


def test_cpu_spinning_right_after_nccl_init_still_counts_as_hung(context: ToolContext) -> None:
    output = launch(context, "spin-after-nccl")
    try:
        assert output["readiness"]["outcome"] == "hung"
    finally:
        stop(context)


def test_wait_timeout_leaves_a_loading_engine_running(context: ToolContext) -> None:
    # Long enough for the stand-in to have started printing progress even on a loaded machine.
    output = launch(context, "endless-loading", wait_timeout_seconds=3.0)
    try:
        readiness = output["readiness"]
        assert readiness["outcome"] == "timeout"
        assert readiness["diagnosis"]["class"] == "loading"
        assert context.state.processes[-1].state == "loading"
        assert context.host.status(output["pid"], context.state.processes[-1].create_time).alive
        status = REGISTRY.execute("engine_status", {"tail_lines": 2}, context).output
        assert status is not None and status["diagnosis"]["class"] == "loading"
        assert len(status["last_lines"]) == 2
    finally:
        stop(context)


def test_no_wait_returns_at_once_and_status_follows(context: ToolContext) -> None:
    output = launch(context, "ready", wait=False)
    try:
        assert output["readiness"]["outcome"] == "not_waited"
        record = context.state.processes[-1]
        assert wait_for(lambda: REGISTRY.execute("engine_status", {}, context).output["state"] == "ready", timeout=15)
        assert record.state == "ready"
    finally:
        stop(context)


def test_vllm_is_ready_by_health_even_without_a_ready_line(context: ToolContext) -> None:
    output = launch(context, "vllm-no-ready-line", engine="vllm")
    try:
        assert output["argv"][1] == "serve"
        assert output["readiness"]["outcome"] == "ready" and output["readiness"]["ready_line"] is None
    finally:
        stop(context)


def test_a_port_served_by_a_live_engine_is_refused(context: ToolContext) -> None:
    first = launch(context, "ready")
    try:
        port = int(first["base_url"].rsplit(":", 1)[1])
        second = REGISTRY.execute(
            "launch_engine", {"config": {"engine": "sglang", "model_path": "/m", "port": port}}, context
        )
        assert not second.ok and "already serves port" in (second.error or "")
    finally:
        stop(context)


def test_engine_is_readopted_after_an_agent_restart(context: ToolContext, tmp_path: Path) -> None:
    launch(context, "ready")
    saved = ProjectState.model_validate_json(context.state.model_dump_json())
    restarted = make_context(tmp_path, host=EngineStandInHost(exit_dir=tmp_path / "exits"))
    restarted.state = saved
    notes = reconcile_processes(saved, restarted.host)
    assert "re-adopted" in notes[0]
    status = REGISTRY.execute("engine_status", {}, restarted).output
    assert status is not None and status["alive"] and "-> 200" in status["health"]
    stopped = REGISTRY.execute("stop_engine", {"grace_seconds": 5}, restarted).output
    assert stopped is not None and stopped["stopped"]
    after = REGISTRY.execute("engine_status", {}, restarted).output
    assert after is not None and after["state"] == "stopped" and not after["alive"]


def test_unknown_engine_name_is_a_clear_error(context: ToolContext) -> None:
    result = REGISTRY.execute("engine_status", {"name": "nope"}, context)
    assert not result.ok and "no managed process named 'nope'" in (result.error or "")
