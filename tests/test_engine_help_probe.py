"""An engine whose version the release data cannot place (a development build) is asked for its --help, once
per environment; the flags it lists decide the command, and a wanted feature it lacks is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

from support.sim import write_scenario
from support.tool_context import make_context

from engine_facts.accepted_flags import from_help_text
from tools.base import ToolContext, ToolRegistry
from tools.engines.launch import LaunchEngineTool
from tools.hosts.sim.host import SimHost

REGISTRY = ToolRegistry([LaunchEngineTool()])


def dry_run(context: ToolContext, **config: object) -> tuple[bool, dict[str, object] | str]:
    arguments = {"config": {"engine": "sglang", "model_path": "/models/m", **config}, "dry_run": True}
    result = REGISTRY.execute("launch_engine", arguments, context)
    return (True, result.output) if result.ok and result.output is not None else (False, result.error or "")


def test_development_build_flags_come_from_its_help_and_are_cached(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, sglang="0.0.0.dev0")
    context = make_context(tmp_path, host=SimHost.from_scenario(str(scenario), tmp_path / "state"))
    ok, output = dry_run(context, cuda_graph_max_bs=32)
    assert ok and isinstance(output, dict), output
    assert output["engine_version"] == "0.0.0.dev0" and output["flags_from"] == "--help of 0.0.0.dev0"
    argv = output["argv"]
    assert isinstance(argv, list) and argv[argv.index("--cuda-graph-max-bs-decode") + 1] == "32"
    cached = list((context.state_dir / "cache").glob("sglang-help-*.json"))
    assert len(cached) == 1
    # The cached flags are used from now on: without the decode flag the cap cannot be expressed.
    document = json.loads(cached[0].read_text())
    document["flags"] = [flag for flag in document["flags"] if "--cuda-graph-max-bs-decode" not in flag["names"]]
    cached[0].write_text(json.dumps(document))
    ok, error = dry_run(context, cuda_graph_max_bs=32)
    assert not ok and "CUDA-graph batch cap" in str(error) and "--cuda-graph-max-bs-decode" in str(error)


def test_help_text_reading() -> None:
    text = """usage: vllm serve [-h] [--port PORT] [--enforce-eager | --no-enforce-eager]

options:
  -h, --help            show this help message and exit
  --port PORT           Port number.
  --attention-backend {FLASH_ATTN,TRITON_MLA}
                        Attention backend.
  --enforce-eager, --no-enforce-eager
                        Always use eager-mode PyTorch.
  --served-model-name SERVED_MODEL_NAME [SERVED_MODEL_NAME ...]
  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE
"""
    flags = from_help_text("vllm", "0.40.0", text)
    assert flags.origin == "help"
    assert flags.flag("--attention-backend").choices == ["FLASH_ATTN", "TRITON_MLA"]  # type: ignore[union-attr]
    assert flags.flag("--enforce-eager").takes == "optbool" and flags.accepts("--no-enforce-eager")  # type: ignore[union-attr]
    assert flags.flag("--served-model-name").takes == "many"  # type: ignore[union-attr]
    assert flags.lookup("-tp") is flags.flag("--tensor-parallel-size")
    assert flags.lookup("--tensor") is not None and flags.lookup("--nope") is None
