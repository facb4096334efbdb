"""What check_nodes concludes from the facts it gathered (NCCL settings per node, hardware and clock findings), and
how the runbook carries those conclusions into the launch configuration of a multi-node run."""

from __future__ import annotations

from agent.policies.runbook.planning import _multi_node
from agent.policies.runbook.progress import RunbookProgress
from agent.state import ProjectState
from tools.cluster.preflight import CheckNodesArgs, _hardware, _settings
from tools.records import ClusterFacts, NodeFacts


def _node(rank: int, **facts: object) -> NodeFacts:
    defaults: dict[str, object] = {"host": f"node{rank}", "rank": rank, "reachable": True, "gpus": 8}
    return NodeFacts.model_validate({**defaults, "gpu_name": "NVIDIA H100 80GB HBM3", **facts})


def test_each_node_gets_its_connecting_interface_and_infiniband_off_unless_everywhere() -> None:
    cluster = ClusterFacts(
        nodes=[
            _node(0, interface="ens5", nccl_default_interface="eth0", infiniband=True),
            _node(1, interface="enp1s0", nccl_default_interface="enp1s0", infiniband=False),
        ]
    )
    _settings(cluster)
    assert cluster.node_env == {
        "node0": {"NCCL_SOCKET_IFNAME": "ens5", "NCCL_IB_DISABLE": "1"},
        "node1": {"NCCL_SOCKET_IFNAME": "enp1s0", "NCCL_IB_DISABLE": "1"},
    }
    assert cluster.warnings == [
        "node 0 (node0): NCCL would pick eth0 by itself, which does not connect the nodes; "
        "NCCL_SOCKET_IFNAME=ens5 is needed"
    ]
    everywhere = ClusterFacts(nodes=[_node(0, interface="ens5", infiniband=True), _node(1, infiniband=True)])
    _settings(everywhere)
    assert everywhere.node_env == {"node0": {"NCCL_SOCKET_IFNAME": "ens5"}, "node1": {}}  # IB stays on


def test_differing_gpus_a_node_without_gpus_and_a_skewed_clock_are_named() -> None:
    cluster = ClusterFacts(
        nodes=[
            _node(0, clock_offset_seconds=0.3),
            _node(1, gpus=0, gpu_name=None, clock_offset_seconds=-7.5),
        ]
    )
    _hardware(cluster, CheckNodesArgs())
    assert cluster.problems == ["a node has no usable GPU: node0: 8, node1: 0"]
    assert cluster.warnings[0].startswith("the nodes differ (node 0: 8x NVIDIA H100 80GB HBM3, node 1: 0x None)")
    assert cluster.warnings[1].startswith("node 1 (node1): clock -7.5 s from the agent's")
    assert len(cluster.warnings) == 2  # node 0's 0.3 s is within the default 2 s


def test_the_runbook_spreads_the_launch_over_the_checked_nodes() -> None:
    state = ProjectState(goal="serve deepseek-class model on two nodes")
    state.environment.cluster = ClusterFacts(
        nodes=[_node(0, interface="ens5"), _node(1, interface="ens6")],
        init_address="10.77.0.1:29500",
        node_env={"node0": {"NCCL_SOCKET_IFNAME": "ens5"}, "node1": {"NCCL_SOCKET_IFNAME": "ens6"}},
    )
    progress = RunbookProgress(base_config={"model_path": "/models/dsv3", "tp_size": 16})
    said = _multi_node(state, progress)
    assert progress.base_config == {
        "model_path": "/models/dsv3",
        "tp_size": 16,
        "nnodes": 2,
        "dist_init_addr": "10.77.0.1:29500",
    }
    assert progress.node_env == {"node0": {"NCCL_SOCKET_IFNAME": "ens5"}, "node1": {"NCCL_SOCKET_IFNAME": "ens6"}}
    assert said == " across 2 nodes (init 10.77.0.1:29500; NCCL_SOCKET_IFNAME node0: ens5, node1: ens6)"


def test_one_node_or_no_init_address_leaves_the_launch_alone() -> None:
    state = ProjectState(goal="serve")
    progress = RunbookProgress(base_config={"tp_size": 8})
    assert _multi_node(state, progress) == "" and progress.base_config == {"tp_size": 8}
    state.environment.cluster = ClusterFacts(nodes=[_node(0), _node(1)])  # check_nodes found no init address
    assert _multi_node(state, progress) == "" and progress.base_config == {"tp_size": 8} and progress.node_env == {}
