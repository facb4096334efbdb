"""check_nodes: before a multi-node launch, find out whether the hosts can run one engine together.

Each finding comes from the hosts themselves: SSH reachability, GPUs, interfaces, InfiniBand ports and clocks;
then node 0 listens on the rendezvous port and every other node tries each of node 0's addresses, and node 0
tries each node's address back, so the init address and NCCL_SOCKET_IFNAME are taken from the interfaces that
actually connect the nodes. What would make a launch hang (a node that cannot reach the init address, a port in
use) is a problem reported now, not a 30-minute wait later.
"""

from __future__ import annotations

import time
from typing import ClassVar

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput
from tools.cluster.nccl import holding, socket_interface
from tools.hosts.base import CallInterrupted, Host, HostUnreachable, NetworkInterface
from tools.records import ClusterFacts, NodeFacts


class CheckNodesArgs(ToolArgs):
    init_port: int | None = Field(
        None, ge=1024, le=65535, description="Rendezvous port on node 0 (default: one that is free there now)."
    )
    engine_port: int | None = Field(None, ge=1, le=65535, description="The server's port on node 0; checked free.")
    connect_timeout_seconds: float = Field(2.0, gt=0, le=30, description="Per connection attempt between nodes.")
    max_clock_skew_seconds: float = Field(2.0, gt=0, description="A larger offset from the agent's clock is reported.")


class CheckNodesOutput(ToolOutput):
    ready: bool
    summary: str
    cluster: ClusterFacts


def _look(host: Host, rank: int) -> tuple[NodeFacts, list[NetworkInterface]]:
    """What one host says about itself; an unreachable one is marked so."""
    node = NodeFacts(host=host.name, rank=rank)
    try:
        before = time.time()
        remote = host.clock()
        node.clock_offset_seconds = round(remote - (before + time.time()) / 2, 3)
        interfaces = host.interfaces()
        gpus = host.probe_gpus().gpus
        node.infiniband = any("ACTIVE" in port.get("state", "") for port in host.infiniband_ports())
    except (HostUnreachable, CallInterrupted) as error:
        node.error = str(error)
        return node, []
    node.reachable = True
    node.gpus = len(gpus)
    node.gpu_name = gpus[0].name if gpus else None
    node.gpu_memory_mib = gpus[0].memory_total_mib if gpus else 0
    node.interfaces = [f"{item.name} {address}" for item in interfaces for address in item.addresses]
    default = socket_interface(interfaces, {})
    node.nccl_default_interface = default.name if default else None
    return node, interfaces


def _candidates(interfaces: list[NetworkInterface]) -> list[str]:
    return [
        address.split("/")[0]
        for item in interfaces
        if item.name != "lo" and item.up is not False
        for address in item.addresses
        if not address.startswith("127.")
    ]


def _reach_head(
    cluster: ClusterFacts, hosts: list[Host], interfaces: list[list[NetworkInterface]], args: CheckNodesArgs
) -> None:
    """Choose the init address: one of node 0's addresses every other node reaches on the rendezvous port."""
    head, head_host = cluster.nodes[0], hosts[0]
    addresses = _candidates(interfaces[0])
    window = 30.0 + 3 * args.connect_timeout_seconds * len(addresses) * len(hosts)
    port, error = head_host.listen("0.0.0.0", args.init_port or 0, window)
    if port is None:
        cluster.problems.append(f"node 0 ({head.host}) cannot listen on port {args.init_port}: {error}")
        return
    try:
        tried: dict[int, dict[str, str | None]] = {
            node.rank: {
                address: host.connect_error(address, port, args.connect_timeout_seconds) for address in addresses
            }
            for node, host in zip(cluster.nodes[1:], hosts[1:], strict=True)
        }
    finally:
        head_host.stop_listening(port)
    common = [address for address in addresses if all(result[address] is None for result in tried.values())]
    for node in cluster.nodes[1:]:
        if not any(error is None for error in tried[node.rank].values()):
            attempts = "; ".join(f"{address}: {error}" for address, error in tried[node.rank].items())
            cluster.problems.append(
                f"node {node.rank} ({node.host}) cannot reach node 0 ({head.host}) on the rendezvous port {port} at "
                f"any of its addresses ({attempts}); a launch would hang at the init address"
            )
    if not common:
        return
    cluster.init_address = f"{common[0]}:{port}"
    head.address = common[0]
    found = holding(interfaces[0], common[0])
    head.interface = found.name if found else None


def _reach_back(cluster: ClusterFacts, hosts: list[Host], args: CheckNodesArgs) -> None:
    """Every node's own address on the connecting network, and whether node 0 reaches it there (NCCL's ranks
    connect to each other, not only to node 0)."""
    head = cluster.nodes[0]
    assert head.address is not None
    for node, host in zip(cluster.nodes[1:], hosts[1:], strict=True):
        node.interface, node.address = host.route_to(head.address)
        if node.address is None:
            cluster.problems.append(f"node {node.rank} ({node.host}) has no route to node 0 at {head.address}")
            continue
        port, error = host.listen(node.address, 0, 30.0)
        if port is None:
            cluster.problems.append(f"node {node.rank} ({node.host}) cannot listen on {node.address}: {error}")
            continue
        try:
            back = hosts[0].connect_error(node.address, port, args.connect_timeout_seconds)
        finally:
            host.stop_listening(port)
        if back is not None:
            cluster.problems.append(
                f"node 0 ({head.host}) cannot reach node {node.rank} ({node.host}) at {node.address}: {back}"
            )


def _settings(cluster: ClusterFacts) -> None:
    """NCCL settings per node: the connecting interface, and InfiniBand off unless every node has an active port."""
    ib_everywhere = all(node.infiniband for node in cluster.nodes)
    for node in cluster.nodes:
        env = {"NCCL_SOCKET_IFNAME": node.interface} if node.interface else {}
        if not ib_everywhere:
            env["NCCL_IB_DISABLE"] = "1"
        cluster.node_env[node.host] = env
        if node.interface and node.nccl_default_interface and node.nccl_default_interface != node.interface:
            cluster.warnings.append(
                f"node {node.rank} ({node.host}): NCCL would pick {node.nccl_default_interface} by itself, which "
                f"does not connect the nodes; NCCL_SOCKET_IFNAME={node.interface} is needed"
            )


def _hardware(cluster: ClusterFacts, args: CheckNodesArgs) -> None:
    kinds = {(node.gpus, node.gpu_name) for node in cluster.nodes}
    if len(kinds) > 1:
        described = ", ".join(f"node {node.rank}: {node.gpus}x {node.gpu_name}" for node in cluster.nodes)
        cluster.warnings.append(f"the nodes differ ({described}); one engine needs the same GPUs on each")
    if any(node.gpus == 0 for node in cluster.nodes):
        cluster.problems.append("a node has no usable GPU: " + ", ".join(f"{n.host}: {n.gpus}" for n in cluster.nodes))
    for node in cluster.nodes:
        offset = node.clock_offset_seconds
        if offset is not None and abs(offset) > args.max_clock_skew_seconds:
            cluster.warnings.append(
                f"node {node.rank} ({node.host}): clock {offset:+.1f} s from the agent's; logs will not line up "
                "and certificate or token checks may fail (check NTP/chrony)"
            )


def check_nodes(context: ToolContext, args: CheckNodesArgs) -> ClusterFacts:
    hosts = context.all_hosts()
    looked = [_look(host, rank) for rank, host in enumerate(hosts)]
    cluster = ClusterFacts(nodes=[node for node, _ in looked])
    for node in cluster.nodes:
        if not node.reachable:
            cluster.problems.append(f"node {node.rank} ({node.host}) cannot be reached: {node.error}")
    if cluster.problems:
        return cluster
    _hardware(cluster, args)
    if len(hosts) > 1:
        _reach_head(cluster, hosts, [interfaces for _, interfaces in looked], args)
    if cluster.init_address and not cluster.problems:
        _reach_back(cluster, hosts, args)
    if args.engine_port and hosts[0].connect_error("127.0.0.1", args.engine_port, 0.5) is None:
        cluster.problems.append(f"port {args.engine_port} on node 0 ({hosts[0].name}) is already in use")
    _settings(cluster)
    return cluster


def _summary(cluster: ClusterFacts) -> str:
    gpus = sum(node.gpus for node in cluster.nodes)
    if not cluster.ready:
        return f"{len(cluster.nodes)} node(s) not ready: " + "; ".join(cluster.problems)
    interfaces = "/".join(node.interface or "?" for node in cluster.nodes)
    ib = "InfiniBand on" if all(node.infiniband for node in cluster.nodes) else "InfiniBand off"
    return (
        f"{len(cluster.nodes)} nodes, {gpus} GPUs; init address {cluster.init_address}; "
        f"NCCL_SOCKET_IFNAME {interfaces}; {ib}"
    )


class CheckNodesTool(Tool[CheckNodesArgs, CheckNodesOutput]):
    name = "check_nodes"
    description = (
        "Before a multi-node launch: reach every host of the run, read its GPUs, interfaces, InfiniBand ports and "
        "clock, and test the network between the nodes (each node to node 0's rendezvous port, node 0 back to "
        "each node). Chooses the init address (dist_init_addr) and each node's NCCL_SOCKET_IFNAME from the "
        "interfaces that really connect the nodes, NCCL_IB_DISABLE by what the nodes have, and reports what would "
        "make the launch hang (unreachable node, blocked port, port in use). Records state.environment.cluster."
    )
    args_model = CheckNodesArgs
    output_model = CheckNodesOutput
    timeout_seconds: ClassVar[float] = 600.0

    def run(self, args: CheckNodesArgs, context: ToolContext) -> CheckNodesOutput:
        cluster = check_nodes(context, args)
        context.state.environment.cluster = cluster
        summary = _summary(cluster)
        context.state.add_finding(f"nodes: {summary}", evidence=cluster.problems + cluster.warnings, pinned=True)
        return CheckNodesOutput(ready=cluster.ready, summary=summary, cluster=cluster)
