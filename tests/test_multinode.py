"""One engine across two namespaced hosts reached over real SSH: the runbook brings a two-node scenario up to done,
gets past NCCL's wrong interface by setting NCCL_SOCKET_IFNAME from what check_nodes measured, and reports a node
cut off from node 0 as such instead of launching into a hang."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_agent
from support.cluster import namespaced_cluster

GOAL = "serve deepseek-class model on two nodes"


def _run(scenario: str, tmp_path: Path) -> tuple[int, dict[str, object], str]:
    with namespaced_cluster(scenario, tmp_path / "cluster") as nodes:
        state_dir = tmp_path / "state"
        nodes.write_agent_toml(state_dir)
        completed = run_agent(
            "run", "--goal", GOAL, "--sim", scenario, "--host", "node0", "--host", "node1",
            "--policy", "runbook", "--state-dir", state_dir, "--max-steps", "60", "--json",
            environment=nodes.environment(), timeout=420,
        )  # fmt: skip
        stopped = run_agent("tool", "stop_engine", "--state-dir", state_dir, environment=nodes.environment())
        assert stopped.returncode in (0, 1), stopped.stderr  # 1: no engine was running
    state = json.loads((state_dir / "latest.json").read_text())
    return completed.returncode, state, completed.stdout + completed.stderr


def test_two_nodes_reach_done_through_ssh(tmp_path: Path) -> None:
    code, state, output = _run("dsv3-2x8-h100", tmp_path)
    assert code == 0, output
    ranks = [item for item in state["processes"] if item["name"].startswith("engine")]
    assert {item.get("host") or "node0" for item in ranks} == {"node0", "node1"}  # one rank on each node
    rank1 = next(item for item in ranks if item["kind"] == "engine_rank")
    assert "--node-rank" in rank1["argv"] and rank1["argv"][rank1["argv"].index("--node-rank") + 1] == "1"
    assert rank1["log_path"].endswith(".log") and "/runs/" in rank1["log_path"]  # written on the node
    cluster = state["environment"]["cluster"]
    assert cluster["init_address"] and cluster["problems"] == []
    assert state["benchmarks"], "benchmarked through the forwarded port"


def test_the_agent_sets_the_nccl_interface_that_connects_the_nodes(tmp_path: Path) -> None:
    code, state, output = _run("dsv3-2x8-wrong-iface", tmp_path)
    assert code == 0, output
    cluster = state["environment"]["cluster"]
    assert all(node["nccl_default_interface"] == "eno1" for node in cluster["nodes"])  # NCCL's own, wrong choice
    assert {env["NCCL_SOCKET_IFNAME"] for env in cluster["node_env"].values()} == {"ens5"}
    engine = next(item for item in state["processes"] if item["kind"] == "engine")
    assert engine["env"]["NCCL_SOCKET_IFNAME"] == "ens5"
    assert any("NCCL would pick eno1" in line for line in cluster["warnings"])


def test_without_the_interface_setting_the_launch_hangs_and_names_the_ranks(tmp_path: Path) -> None:
    scenario = "dsv3-2x8-wrong-iface"
    with namespaced_cluster(scenario, tmp_path / "cluster") as nodes:
        state_dir = tmp_path / "state"
        nodes.write_agent_toml(state_dir)
        environment = nodes.environment()
        base = ("--state-dir", state_dir, "--sim", scenario, "--host", "node0", "--host", "node1")
        probe = run_agent("tool", "probe_system", *base, environment=environment, timeout=120)
        checked = run_agent("tool", "check_nodes", *base, environment=environment, timeout=120)
        assert probe.returncode == 0 and checked.returncode == 0, probe.stderr + checked.stderr
        state = json.loads((state_dir / "latest.json").read_text())
        config = {
            "engine": "sglang",
            "model_path": state["environment"]["models"][0]["path"],
            "tp_size": 16,
            "nnodes": 2,
            "dist_init_addr": state["environment"]["cluster"]["init_address"],
            "env": {"NCCL_DEBUG": "INFO"},
        }
        arguments = json.dumps({"config": config, "poll_seconds": 0.5})
        launched = run_agent("tool", "launch_engine", "--args", arguments, *base, environment=environment, timeout=180)
        run_agent("tool", "stop_engine", *base, environment=environment)
    readiness = json.loads(launched.stdout)["output"]["readiness"]
    ranks = json.loads(launched.stdout)["output"]["ranks"]
    assert readiness["outcome"] == "hung"
    assert readiness["diagnosis"]["class"] == "nccl_hang"
    assert [(rank["host"], rank["node_rank"]) for rank in ranks] == [("node0", 0), ("node1", 1)]
    assert readiness["failed_process"] in {rank["name"] for rank in ranks}


def test_a_node_cut_off_from_node_zero_is_reported_before_any_launch(tmp_path: Path) -> None:
    code, state, output = _run("dsv3-2x8-unreachable", tmp_path)
    assert code == 3, output  # blocked: a question for a person
    question = state["questions"][-1]
    assert "cannot run one engine together" in question["question"]
    assert any("node 1 (node1) cannot reach node 0 (node0)" in line for line in question["evidence"])
    assert not [item for item in state["processes"] if item["kind"].startswith("engine")]  # nothing launched
