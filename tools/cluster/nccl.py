"""How NCCL picks the interface for its sockets, so the agent can say what NCCL would do left to itself.

``NCCL_SOCKET_IFNAME``: comma-separated name prefixes; a leading ``^`` excludes them, a leading ``=`` makes them
exact names. Unset, NCCL takes interfaces that are neither ``docker*`` nor ``lo`` (InfiniBand ones first, which
the socket transport does not need here), in the order the system lists them.
"""

from __future__ import annotations

from collections.abc import Mapping

from tools.hosts.base import NetworkInterface


def _matches(name: str, wanted: str) -> bool:
    exact = wanted.startswith("=")
    return any(name == part if exact else name.startswith(part) for part in wanted.lstrip("=").split(",") if part)


def socket_interface(interfaces: list[NetworkInterface], env: Mapping[str, str]) -> NetworkInterface | None:
    """The interface NCCL's socket transport would use on a host with these interfaces and this environment."""
    wanted = env.get("NCCL_SOCKET_IFNAME", "").strip()
    if wanted.startswith("^"):
        candidates = [item for item in interfaces if not _matches(item.name, wanted[1:])]
    elif wanted:
        candidates = [item for item in interfaces if _matches(item.name, wanted)]
    else:
        candidates = [item for item in interfaces if not item.name.startswith(("docker", "lo"))]
    return next((item for item in candidates if item.up is not False and item.addresses), None)


def holding(interfaces: list[NetworkInterface], address: str) -> NetworkInterface | None:
    """The interface that has ``address``."""
    return next((item for item in interfaces if any(entry.split("/")[0] == address for entry in item.addresses)), None)
