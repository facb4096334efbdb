"""A silent NCCL hang is judged hung, and diagnosed as one, whatever wording the release uses for the start
of distributed init (SGLang <= 0.5.20, SGLang >= 0.5.21, vLLM). Runs the twin's engine stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sim import free_port, write_scenario
from support.tool_context import make_context

from tools.base import ToolRegistry
from tools.engines.control import StopEngineTool
from tools.engines.launch import LaunchEngineTool
from tools.hosts.sim.host import SimHost

HANG = """
[[rules]]
name = "first all-reduce hangs"
outcome = "hang"
at = "init"
[rules.when.env]
NCCL_P2P_DISABLE = { not_in = ["1"] }
"""
REGISTRY = ToolRegistry([LaunchEngineTool(), StopEngineTool()])
WORDING = {
    "0.5.20": "Init torch distributed begin.",
    "0.5.21": "Init parallel begin.",
    "0.33.0": "in world size 2 is assigned as",
}


@pytest.mark.parametrize(("engine", "version"), [("sglang", "0.5.20"), ("sglang", "0.5.21"), ("vllm", "0.33.0")])
def test_silent_nccl_hang_is_hung(tmp_path: Path, engine: str, version: str) -> None:
    scenario = write_scenario(tmp_path, HANG, sglang=version if engine == "sglang" else "0.5.10")
    context = make_context(tmp_path, host=SimHost.from_scenario(str(scenario), tmp_path / "state"))
    config = {
        "engine": engine,
        "model_path": str(context.host.model_dir),
        "tp_size": 2,  # type: ignore[attr-defined]
        "port": free_port(),
    }
    arguments = {
        "config": config,
        "engine_version": version,
        "poll_seconds": 0.1,
        "health_every_seconds": 0.5,
        "hang_after_seconds": 2.0,
        "wait_timeout_seconds": 60,
    }
    result = REGISTRY.execute("launch_engine", arguments, context)
    try:
        assert result.ok and result.output is not None, result.error
        readiness = result.output["readiness"]
        log = Path(result.output["log_path"]).read_text()
        assert WORDING[version] in log
        assert readiness["outcome"] == "hung"
        assert readiness["diagnosis"]["class"] == "nccl_hang", readiness["diagnosis"]
        assert "initialising torch.distributed / NCCL" in readiness["milestones"]
    finally:
        REGISTRY.execute("stop_engine", {"name": "engine"}, context)
