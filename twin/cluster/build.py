"""Build and tear down the namespaced nodes of a scenario's cluster, and remember them in ``DIR/cluster.json``.

Teardown stops the sshd servers it started and every process still inside its namespaces (all of them were
started through those servers), then deletes the namespaces and the bridge; it is safe to call twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from twin.cluster import network, sshd
from twin.cluster.network import ClusterUnavailable, Node
from twin.scenario import Scenario

STATE_FILE = "cluster.json"


@dataclass
class Cluster:
    directory: Path
    token: str
    bridge: str
    nodes: list[Node]
    sshd_pids: list[int] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    session_environment: dict[str, str] = field(default_factory=dict)  # set in every SSH session on the nodes

    @property
    def home(self) -> Path:
        """A home directory whose ``.ssh/config`` names the nodes ``node0``, ``node1``, ..."""
        return self.directory / "home"

    @property
    def identity(self) -> Path:
        return self.directory / "client_key"

    def node_dir(self, index: int) -> Path:
        return self.directory / f"node{index}"

    def save(self) -> None:
        data = asdict(self)
        data["directory"] = str(self.directory)
        (self.directory / STATE_FILE).write_text(json.dumps(data, indent=1))

    @classmethod
    def load(cls, directory: Path) -> Cluster:
        data = json.loads((directory / STATE_FILE).read_text())
        data["directory"] = Path(data["directory"])
        data["nodes"] = [Node(**node) for node in data["nodes"]]
        return cls(**data)

    def restart_sshd(self, index: int, new_host_key: bool = False) -> None:
        """Restart one node's server, optionally with a newly generated host key (a reinstalled machine)."""
        directory = self.node_dir(index)
        sshd.stop(self.sshd_pids[index], directory)
        time.sleep(0.2)
        if new_host_key:
            for name in ("host_key", "host_key.pub"):
                (directory / name).unlink(missing_ok=True)
        self.sshd_pids[index] = sshd.start(
            self.nodes[index], directory, self.identity.with_suffix(".pub"), self.session_environment
        )
        self.save()

    def down(self) -> None:
        for index, pid in enumerate(self.sshd_pids):
            sshd.stop(pid, self.node_dir(index))
        for node in self.nodes:
            for pid in network.namespace_pids(node.namespace):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        network.remove([node.namespace for node in self.nodes], self.bridge)


def up(scenario: Scenario, directory: Path, session_environment: Mapping[str, str] | None = None) -> Cluster:
    """The scenario's nodes on a fresh subnet, each with an sshd; torn down again if any step fails.

    ``session_environment`` is set in every SSH session the nodes' servers start (and so in every process
    started through them)."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("building network namespaces needs root")
    directory.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(3)
    subnet = network.claim_subnet(f"opb{token}")
    hosts = list(subnet.hosts())
    spec = scenario.cluster
    nodes = [
        Node(
            index=index,
            namespace=f"opsloop-{token}-n{index}",
            address=str(hosts[index]),
            decoy_address=f"192.168.{100 + index}.10" if spec.decoy_interface else None,
        )
        for index in range(spec.nodes)
    ]
    cluster = Cluster(
        directory=directory,
        token=token,
        bridge=f"opb{token}",
        nodes=nodes,
        session_environment=dict(session_environment or {}),
    )
    try:
        for node in nodes:
            network.make_node(node, token, cluster.bridge, subnet.prefixlen, spec.decoy_interface)
        for isolated in spec.isolated_nodes:
            network.isolate(nodes[isolated], nodes[0])
        sshd.keygen(cluster.identity)
        for node in nodes:
            cluster.sshd_pids.append(
                sshd.start(
                    node,
                    cluster.node_dir(node.index),
                    cluster.identity.with_suffix(".pub"),
                    cluster.session_environment,
                )
            )
        cluster.aliases = sshd.write_client_home(
            cluster.home, nodes, cluster.identity, [cluster.node_dir(node.index) for node in nodes]
        )
    except BaseException:
        cluster.down()
        raise
    cluster.save()
    return cluster
