"""render_deployment: SkyPilot tasks and LeaderWorkerSet manifests for the twin's configurations, checked against
SkyPilot's own task schema and the LeaderWorkerSet CRD schema; launch_deployment without SkyPilot says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import schemas
from support.tool_context import make_context

from tools.catalog import default_registry
from tools.hosts.base import GpuInfo

TWO_NODES = {
    "engine": "sglang",
    "model_path": "deepseek-ai/DeepSeek-V3",
    "tp_size": 16,
    "nnodes": 2,
    "dist_init_addr": "10.0.0.1:5000",
    "trust_remote_code": True,
    "env": {"NCCL_SOCKET_IFNAME": "ens5", "SGLANG_TORCH_PROFILER_DIR": "/tmp/profiles"},
}
ONE_NODE_VLLM = {"engine": "vllm", "model_path": "moonshotai/Kimi-K2.5", "tp_size": 8, "port": 8000}
TWO_NODES_VLLM = {**ONE_NODE_VLLM, "tp_size": 16, "nnodes": 2, "dist_init_addr": "10.0.0.1:29501"}


def _render(tmp_path: Path, target: str, config: dict[str, Any], version: str, **extra: Any) -> dict[str, Any]:
    context = make_context(tmp_path)
    context.state.environment.packages[config["engine"]] = version
    context.state.environment.gpus = [GpuInfo(index=i, name="NVIDIA H100 80GB HBM3") for i in range(8)]
    arguments = {"target": target, "config": config, "name": "dsv3", **extra}
    result = default_registry().execute("render_deployment", arguments, context)
    assert result.ok and result.output is not None, result.error
    return result.output


CASES = {
    "sglang-2": ("skypilot", TWO_NODES, "0.5.8"),
    "vllm-1": ("skypilot", ONE_NODE_VLLM, "0.33.0"),
    "vllm-2": ("skypilot", TWO_NODES_VLLM, "0.33.0"),
    "lws-sglang-2": ("lws", TWO_NODES, "0.5.8"),
    "lws-vllm-2": ("lws", TWO_NODES_VLLM, "0.33.0"),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], dict[str, object]]]:
    """Every case rendered and checked against the real schemas in one run of the checker."""
    if schemas.skypilot_python() is None:
        pytest.skip("no environment with SkyPilot (.venv-skypilot, made by .ci/run)")
    outputs = {name: _render(tmp_path_factory.mktemp(name), *case) for name, case in CASES.items()}
    bad = tmp_path_factory.mktemp("bad") / "bad.yaml"
    bad.write_text('apiVersion: "leaderworkerset.x-k8s.io/v1"\nkind: "LeaderWorkerSet"\nspec:\n  replicas: 1\n')
    files = [(CASES[name][0], Path(output["path"])) for name, output in outputs.items()] + [("lws", bad)]
    *checked, bad_result = schemas.validate(files)
    results = dict(zip(outputs, checked, strict=True))
    results["bad"] = bad_result
    return {name: (outputs.get(name, {}), result) for name, result in results.items()}


@pytest.mark.parametrize(("name", "nodes"), [("sglang-2", 2), ("vllm-1", 1), ("vllm-2", 2)])
def test_skypilot_tasks_pass_skypilots_own_schema(rendered: dict[str, Any], name: str, nodes: int) -> None:
    output, checked = rendered[name]
    text, engine = output["text"], CASES[name][1]["engine"]
    assert "error" not in checked, checked
    assert checked["num_nodes"] == nodes and "H100" in str(checked["resources"])
    assert "H100:8" in text and "readiness_probe" in text
    if nodes > 1:
        assert 'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)' in text
        assert "--node-rank $SKYPILOT_NODE_RANK" in text
        assert ("--dist-init-addr ${MASTER_ADDR}:5000" in text) == (engine == "sglang")
        assert ("--master-addr ${MASTER_ADDR}" in text) == (engine == "vllm")
    assert "NCCL_SOCKET_IFNAME" not in text  # the local nodes' interface does not travel to a cloud


@pytest.mark.parametrize("name", ["lws-sglang-2", "lws-vllm-2"])
def test_lws_manifests_pass_the_crd_schema(rendered: dict[str, Any], name: str) -> None:
    output, checked = rendered[name]
    assert checked == {"kind": "LeaderWorkerSet"}
    assert "$(LWS_LEADER_ADDRESS)" in output["text"] and "--node-rank $(LWS_WORKER_INDEX)" in output["text"]
    assert "nvidia.com/gpu: 8" in output["text"]


def test_an_invalid_manifest_fails_the_crd_schema(rendered: dict[str, Any]) -> None:
    _, checked = rendered["bad"]
    assert "'leaderWorkerTemplate' is a required property" in str(checked.get("error"))


def test_an_unknown_gpu_needs_the_accelerators_argument(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    context.state.environment.packages["vllm"] = "0.33.0"
    context.state.environment.gpus = [GpuInfo(index=0, name="Some Future GPU")]
    arguments = {"target": "skypilot", "config": ONE_NODE_VLLM, "engine": None}
    result = default_registry().execute("render_deployment", arguments, context)
    assert not result.ok and "pass accelerators" in (result.error or "")


def test_launch_deployment_without_skypilot_says_what_to_install(tmp_path: Path) -> None:
    result = default_registry().execute(
        "launch_deployment", {"action": "status", "cluster": "dsv3"}, make_context(tmp_path)
    )
    if result.ok:
        pytest.skip("SkyPilot is installed on this machine")
    assert "pip install skypilot" in (result.error or "")
