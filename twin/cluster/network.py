"""Namespaces, a bridge and veth pairs with ``ip``: every node on one subnet, the building machine on the bridge.

A decoy interface (a management NIC that reaches no other node) is made first in each namespace, so the system
lists it before the cluster interface, and a route sends the decoy network's traffic into it, where it is
dropped: a connection to another node's decoy address waits, as on a real management network between sites.
An isolated node has the routes between it and node 0 marked unreachable (a firewall between them).
"""

from __future__ import annotations

import ipaddress
import random
import subprocess
from dataclasses import dataclass

CLUSTER_INTERFACE = "ens5"


class ClusterUnavailable(Exception):
    """The machine cannot build namespaces (not root, no iproute2, no kernel support)."""


def ip(*arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(["ip", *arguments], capture_output=True, text=True, check=False)
    if check and completed.returncode != 0:
        raise ClusterUnavailable(f"ip {' '.join(arguments)}: {completed.stderr.strip()}")
    return completed


@dataclass
class Node:
    index: int
    namespace: str
    address: str  # on the cluster network
    decoy_address: str | None = None


def free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 that no route of this machine uses."""
    used = ip("-4", "route", "show", check=False).stdout
    for _ in range(100):
        network = ipaddress.IPv4Network(f"10.{random.randint(100, 250)}.{random.randint(0, 255)}.0/24")
        if str(network.network_address).rsplit(".", 1)[0] + "." not in used:
            return network
    raise ClusterUnavailable("no free 10.x.y.0/24 subnet found")


def make_bridge(name: str, address: str) -> None:
    ip("link", "add", name, "type", "bridge")
    ip("addr", "add", address, "dev", name)
    ip("link", "set", name, "up")


def claim_subnet(bridge: str, attempts: int = 10) -> ipaddress.IPv4Network:
    """A free subnet with the bridge ``bridge`` made on its last address. Another cluster built at the same moment
    may have drawn the same subnet: then two routes name it, both give it up and draw again."""
    for _ in range(attempts):
        subnet = free_subnet()
        try:
            make_bridge(bridge, f"{list(subnet.hosts())[-1]}/{subnet.prefixlen}")
        except ClusterUnavailable:
            ip("link", "delete", bridge, check=False)
            raise
        routes = ip("-4", "route", "show", "exact", str(subnet), check=False).stdout.splitlines()
        if all(f" dev {bridge} " in f" {line} " for line in routes):
            return subnet
        ip("link", "delete", bridge, check=False)
    raise ClusterUnavailable(f"no subnet of our own after {attempts} draws (other clusters took each one)")


def make_node(node: Node, token: str, bridge: str, prefix: int, decoy: str | None) -> None:
    ip("netns", "add", node.namespace)
    ip("-n", node.namespace, "link", "set", "lo", "up")
    if decoy is not None and node.decoy_address is not None:
        ip("-n", node.namespace, "link", "add", decoy, "type", "veth", "peer", "name", f"{decoy}p")
        ip("-n", node.namespace, "link", "set", decoy, "up")
        ip("-n", node.namespace, "addr", "add", f"{node.decoy_address}/24", "dev", decoy)
        ip("-n", node.namespace, "route", "add", "192.168.0.0/16", "dev", decoy)
    outside = f"opv{token}{node.index}"
    ip("link", "add", outside, "type", "veth", "peer", "name", CLUSTER_INTERFACE, "netns", node.namespace)
    ip("link", "set", outside, "master", bridge)
    ip("link", "set", outside, "up")
    ip("-n", node.namespace, "addr", "add", f"{node.address}/{prefix}", "dev", CLUSTER_INTERFACE)
    ip("-n", node.namespace, "link", "set", CLUSTER_INTERFACE, "up")


def isolate(node: Node, head: Node) -> None:
    """No traffic between ``node`` and ``head`` on the cluster network (both ways)."""
    ip("-n", node.namespace, "route", "add", "unreachable", f"{head.address}/32")
    ip("-n", head.namespace, "route", "add", "unreachable", f"{node.address}/32")


def namespace_pids(namespace: str) -> list[int]:
    listed = ip("netns", "pids", namespace, check=False).stdout
    return [int(item) for item in listed.split() if item.isdigit()]


def remove(namespaces: list[str], bridge: str) -> None:
    """Delete the namespaces (their veth ends go with them) and the bridge; what is already gone is skipped."""
    for namespace in namespaces:
        ip("netns", "delete", namespace, check=False)
    ip("link", "delete", bridge, check=False)
