"""launch_engine dry runs: the exact command for an engine release, each version-dependent choice with its
reason, and nothing started. Each command is checked against that release's own flags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.tool_context import make_context

from engine_facts.accepted_flags import from_release_data
from engine_facts.versions import parse_release
from tools.base import ToolContext, ToolRegistry
from tools.engines.launch import LaunchEngineTool

REGISTRY = ToolRegistry([LaunchEngineTool()])
KIMI = "/models/Kimi-K2.5"


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    return make_context(tmp_path)


def dry_run(context: ToolContext, engine: str, version: str, **config: Any) -> dict[str, Any]:
    arguments = {
        "config": {"engine": engine, "model_path": KIMI, "model_attention": "mla", "tp_size": 8, **config},
        "engine_version": version,
        "dry_run": True,
        "compute_capability": "12.0",
    }
    result = REGISTRY.execute("launch_engine", arguments, context)
    if not result.ok:
        return {"error": result.error}
    assert result.output is not None
    return result.output


def accepted_by_release(engine: str, version: str, argv: list[str]) -> None:
    release = parse_release(version)
    assert release is not None
    flags = from_release_data(engine, release)
    assert flags is not None
    start = argv.index("sglang.launch_server") + 1 if engine == "sglang" else argv.index("serve") + 1
    flags.parser(f"{engine} serve").parse_args(argv[start:])  # exits (status 2) if the release rejects it


def reasons(output: dict[str, Any]) -> dict[str, str]:
    return {choice["feature"]: choice["reason"] for choice in output["choices"]}


@pytest.mark.parametrize(
    ("version", "flag"),
    [
        ("0.5.19", "--cuda-graph-max-bs-decode"),
        ("0.5.20", "--cuda-graph-max-bs-decode"),
        ("0.5.13", "--cuda-graph-max-bs"),
    ],
)
def test_sglang_cuda_graph_cap(context: ToolContext, version: str, flag: str) -> None:
    output = dry_run(context, "sglang", version, cuda_graph_max_bs=48)
    assert output["dry_run"] is True and output["pid"] is None and context.state.processes == []
    argv = output["argv"]
    assert argv[argv.index(flag) + 1] == "48"
    assert output["entry_point"].endswith("-m sglang.launch_server")
    accepted_by_release("sglang", version, argv)
    assert flag in reasons(output)["CUDA-graph batch cap"]


def test_sglang_0_5_20_no_longer_accepts_the_old_cap_flag() -> None:
    flags = from_release_data("sglang", (0, 5, 20))
    assert flags is not None and not flags.accepts("--cuda-graph-max-bs")
    with pytest.raises(SystemExit):
        flags.parser("sglang serve").parse_args(["--model-path", "m", "--cuda-graph-max-bs", "8"])


@pytest.mark.parametrize(("version", "in_argv", "in_env"), [("0.12.0", False, True), ("0.13.0", True, False)])
def test_vllm_attention_backend_for_an_mla_model_on_sm120(
    context: ToolContext, version: str, in_argv: bool, in_env: bool
) -> None:
    output = dry_run(context, "vllm", version, attention_backend="triton")
    argv = output["argv"]
    assert ("--attention-backend" in argv) is in_argv
    assert (output["env"].get("VLLM_ATTENTION_BACKEND") == "TRITON_MLA") is in_env
    if in_argv:
        assert argv[argv.index("--attention-backend") + 1] == "TRITON_MLA"
    accepted_by_release("vllm", version, argv)
    assert "MLA" in reasons(output)["attention backend name"]


def test_vllm_refuses_an_mla_backend_that_does_not_run_on_sm120(context: ToolContext) -> None:
    output = dry_run(context, "vllm", "0.13.0", attention_backend="flashinfer")
    assert "FLASHINFER_MLA accepts compute capability 10.x only" in output["error"]
    assert "TRITON_MLA" in output["error"]


def test_vllm_0_8_0_refuses_eagle3_and_0_8_5_builds_it(context: ToolContext) -> None:
    speculative = {"draft_model_path": "/models/kimi-eagle3", "num_steps": 3}
    refused = dry_run(context, "vllm", "0.8.0", speculative=speculative)
    assert "speculative decoding" in refused["error"] and "--speculative-config" in refused["error"]
    output = dry_run(context, "vllm", "0.8.5", speculative=speculative)
    spec = json.loads(output["argv"][output["argv"].index("--speculative-config") + 1])
    assert spec == {"method": "eagle3", "num_speculative_tokens": 3, "model": "/models/kimi-eagle3"}
    accepted_by_release("vllm", "0.8.5", output["argv"])
    assert output["argv"][1] == "serve" and output["entry_point"].endswith("vllm serve")


def test_a_development_build_is_not_taken_for_the_newest_release(context: ToolContext) -> None:
    # No engine is installed here: its --help cannot be read, so the dry run says so instead of guessing.
    output = dry_run(context, "sglang", "0.0.0.dev0", cuda_graph_max_bs=48)
    assert "development build" in output["error"] and "--help" in output["error"]


def test_dry_run_from_the_command_line(tmp_path: Path) -> None:
    arguments = {
        "config": {"engine": "sglang", "model_path": KIMI, "cuda_graph_max_bs": 32},
        "engine_version": "0.5.20",
        "dry_run": True,
    }
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "tool",
            "launch_engine",
            "--args",
            json.dumps(arguments),
            "--json",
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    output = json.loads(completed.stdout)
    result = output.get("output", output)
    assert "--cuda-graph-max-bs-decode" in result["argv"] and result["dry_run"] is True
