"""One engine across several nodes, as the stand-in plays it with real sockets between the nodes.

1. Rendezvous (torch.distributed's TCP store): rank 0 listens at the init address (SGLang ``--dist-init-addr``,
   vLLM ``--master-addr``/``--master-port``); every other rank connects to it, retrying while it cannot, with
   PyTorch's warning lines; past the connect timeout it dies with ``DistNetworkError``, and rank 0 dies with
   ``DistStoreError`` when not every node joined in time.
2. NCCL's socket bootstrap: each rank picks an interface as NCCL does (``NCCL_SOCKET_IFNAME``: comma-separated
   prefixes, ``^`` to exclude, ``=`` for exact names; without it the first interface that is up, has an IPv4
   address and is neither ``lo`` nor ``docker*``), rank 0 listens on its address and the others connect to it
   from theirs. An address the other node cannot reach leaves both sides waiting, silent, as a real NCCL hang.
3. While serving, the ranks keep their rendezvous connections: when one side goes away the other logs an NCCL
   error naming the lost rank and exits.

Durations are simulated seconds (divided by the scenario's time scale).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from twin.clock import SimClock
from twin.scenario import ClusterSpec

RETRY_LOG_SECONDS = 30.0  # simulated seconds between PyTorch's "cannot connect" warnings


@dataclass
class NodeRole:
    nnodes: int
    rank: int
    init_host: str
    init_port: int


def node_role(engine: str, values: Mapping[str, Any]) -> NodeRole | None:
    """This process's place in a multi-node launch, or None for a single node."""
    nnodes = int(values.get("--nnodes") or 1)
    if nnodes <= 1:
        return None
    rank = int(values.get("--node-rank") or 0)
    if engine == "sglang":
        host, _, port = str(values.get("--dist-init-addr") or "127.0.0.1:5000").rpartition(":")
    else:
        host, port = str(values.get("--master-addr") or "127.0.0.1"), str(values.get("--master-port") or 29501)
    return NodeRole(nnodes=nnodes, rank=rank, init_host=host.strip("[]"), init_port=int(port))


def interfaces() -> list[dict[str, Any]]:
    """Interfaces with their IPv4 addresses, in the order the system lists them (``ip -j -4 addr``)."""
    try:
        listed = json.loads(subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, check=True).stdout)
    except (OSError, ValueError, subprocess.CalledProcessError):
        return []
    return [
        {
            "name": item.get("ifname", ""),
            "up": "UP" in (item.get("flags") or []),
            "addresses": [entry["local"] for entry in item.get("addr_info") or []],
        }
        for item in sorted(listed, key=lambda item: item.get("ifindex", 0))
    ]


def _matches(name: str, wanted: str) -> bool:
    exact = wanted.startswith("=")
    names = [part for part in wanted.lstrip("=").split(",") if part]
    return any(name == part if exact else name.startswith(part) for part in names)


def choose_interface(found: list[dict[str, Any]], env: Mapping[str, str]) -> tuple[str, str] | None:
    """(interface, IPv4 address) NCCL would use for its sockets, or None when none qualifies."""
    wanted = env.get("NCCL_SOCKET_IFNAME", "").strip()
    if wanted.startswith("^"):
        candidates = [item for item in found if not _matches(item["name"], wanted[1:])]
    elif wanted:
        candidates = [item for item in found if _matches(item["name"], wanted)]
    else:
        candidates = [item for item in found if not item["name"].startswith(("docker", "lo"))]
    usable = [item for item in candidates if item["up"] and item["addresses"]]
    return (usable[0]["name"], usable[0]["addresses"][0]) if usable else None


def _send(connection: socket.socket, message: dict[str, Any]) -> None:
    connection.sendall((json.dumps(message) + "\n").encode())


def _receive(connection: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        data += chunk
    message = json.loads(data)
    return message if isinstance(message, dict) else {}


class ClusterLink:
    """Joins this rank to the others; ``fail(lines, code)`` and ``hang()`` end the start-up like the engine."""

    def __init__(
        self,
        role: NodeRole,
        spec: ClusterSpec,
        clock: SimClock,
        env: Mapping[str, str],
        write: Callable[[str], None],
        fail: Callable[[list[str], int], None],
        hang: Callable[[], None],
    ) -> None:
        self.role, self.spec, self.clock, self.env = role, spec, clock, env
        self.write, self.fail, self.hang = write, fail, hang
        self.peers: dict[int, socket.socket] = {}  # rank -> rendezvous connection (rank 0 holds all, others one)
        self.debug = env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE")
        self.label = f"{socket.gethostname()}:{os.getpid()}:{os.getpid()} [{role.rank}]"

    # -- rendezvous --------------------------------------------------------------------------------------

    def _serve_store(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.role.init_host, self.role.init_port))
        except OSError as error:
            self.fail(
                [
                    f"torch.distributed.DistNetworkError: failed to bind to {self.role.init_host}:"
                    f"{self.role.init_port} ({error.strerror}): EADDRINUSE"
                    if error.errno == 98
                    else f"torch.distributed.DistNetworkError: cannot listen on {self.role.init_host}:"
                    f"{self.role.init_port}: {error.strerror}"
                ],
                1,
            )
        listener.listen(16)
        deadline = time.monotonic() + self.clock.real_seconds(self.spec.rendezvous_timeout)
        while len(self.peers) < self.role.nnodes - 1:
            listener.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                connection, _ = listener.accept()
                hello = _receive(connection)
            except (OSError, ValueError):
                if time.monotonic() >= deadline:
                    joined = len(self.peers) + 1
                    self.fail(
                        [
                            f"torch.distributed.DistStoreError: Timed out after {self.spec.rendezvous_timeout + 1:.0f}"
                            f" seconds waiting for clients. {joined}/{self.role.nnodes} clients joined."
                        ],
                        1,
                    )
                continue
            self.peers[int(hello.get("rank", -1))] = connection
        listener.close()

    def _join_store(self) -> None:
        deadline = time.monotonic() + self.clock.real_seconds(self.spec.connect_timeout)
        next_warning = 0.0
        target = (self.role.init_host, self.role.init_port)
        while True:
            try:
                connection = socket.create_connection(target, timeout=max(self.clock.real_seconds(5.0), 0.2))
                _send(connection, {"rank": self.role.rank})
                connection.settimeout(None)
                self.peers[0] = connection
                return
            except OSError as error:
                now = time.monotonic()
                if now >= deadline:
                    self.fail(
                        [
                            f"torch.distributed.DistNetworkError: The client socket has timed out after "
                            f"{self.spec.connect_timeout * 1000:.0f}ms while trying to connect to "
                            f"({target[0]}, {target[1]})."
                        ],
                        1,
                    )
                if now >= next_warning:
                    self.write(
                        f"[W socket.cpp:752] [c10d] The client socket cannot be initialized to connect to "
                        f"[{target[0]}]:{target[1]} (errno: {error.errno or 110} - {error.strerror or error})."
                    )
                    next_warning = now + self.clock.real_seconds(RETRY_LOG_SECONDS)
                time.sleep(min(self.clock.real_seconds(1.0), 0.2) + 0.05)

    # -- NCCL's bootstrap -----------------------------------------------------------------------------------

    def _nccl_address(self) -> tuple[str, str]:
        chosen = choose_interface(interfaces(), self.env)
        if chosen is None:
            self.fail(
                [
                    f"{self.label} NCCL WARN Bootstrap : no socket interface found",
                    "torch.distributed.DistBackendError: NCCL error: internal error - no socket interface found",
                ],
                1,
            )
            raise AssertionError("unreachable")
        if self.debug:
            self.write(f"{self.label} NCCL INFO Bootstrap : Using {chosen[0]}:{chosen[1]}<0>")
            self.write(f"{self.label} NCCL INFO NET/IB : No device found.")
            self.write(f"{self.label} NCCL INFO NET/Socket : Using [0]{chosen[0]}:{chosen[1]}<0>")
        return chosen

    def _nccl_rank0(self, address: str) -> None:
        listener = socket.create_server((address, 0))
        port = listener.getsockname()[1]
        for connection in self.peers.values():
            _send(connection, {"nccl": [address, port]})
        listener.settimeout(None)  # a peer that cannot reach this address leaves rank 0 waiting here
        for _ in range(self.role.nnodes - 1):
            accepted, _ = listener.accept()
            accepted.close()
        listener.close()

    def _nccl_rank(self, address: str) -> None:
        message = _receive(self.peers[0])
        peer_address, peer_port = message["nccl"]
        try:
            with socket.create_connection((peer_address, peer_port), timeout=None, source_address=(address, 0)):
                pass
        except OSError:
            self.hang()  # NCCL keeps retrying an address it cannot reach: silent, alive

    def join(self) -> None:
        """Rendezvous, then NCCL's bootstrap; returns when every node is connected."""
        if self.role.rank == 0:
            self._serve_store()
        else:
            self._join_store()
        _, address = self._nccl_address()
        if self.role.rank == 0:
            self._nccl_rank0(address)
        else:
            self._nccl_rank(address)
        if self.debug:
            self.write(f"{self.label} NCCL INFO Connected all rings")
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        """Exit with an NCCL error when a peer's connection ends (the other node died or was stopped)."""
        lost = _first_closed(self.peers)
        self.fail(
            [
                f"{self.label} NCCL WARN Net : Connection closed by remote peer (rank {lost})",
                f"torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network "
                f"error; node rank {lost} is gone",
            ],
            1,
        )


def _first_closed(peers: dict[int, socket.socket]) -> int:
    """Block until one of the connections closes; the rank whose did."""
    import selectors

    selector = selectors.DefaultSelector()
    for rank, connection in peers.items():
        connection.setblocking(True)
        selector.register(connection, selectors.EVENT_READ, rank)
    while True:
        for key, _ in selector.select():
            try:
                data = key.fileobj.recv(4096)  # type: ignore[union-attr]
            except OSError:
                data = b""
            if not data:
                return int(key.data)
