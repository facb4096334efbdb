"""The simulated host's own ports: each simulated port is served on a free real loopback port.

A simulated host is another machine, so its ports must not collide with services on the machine the
twin runs on (a real server on 30000 is not "port 30000 of the simulated host"). The map lives in
``<sim root>/ports.json``: simulated port -> the real port that stands for it and the simulated process
that holds it. The agent reaches a simulated port through :meth:`PortMap.reach`; an engine stand-in
binds through :meth:`PortMap.claim`. A simulated port held by a live simulated process is busy for a
second one, exactly like on a real host. Every update happens under a file lock.

Stand-ins learn where the map is from ``OPSLOOP_SIM_PORT_MAP`` (set by the simulated host); without
it they bind the port they were given, as when a test starts one directly.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

PORT_MAP_VARIABLE = "OPSLOOP_SIM_PORT_MAP"
LOOPBACK_NAMES = {"127.0.0.1", "localhost", "0.0.0.0", "::1", "::", ""}


class SimulatedPortBusy(Exception):
    """Another live simulated process holds this simulated port."""


def free_real_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _alive(owner: dict[str, Any] | None) -> bool:
    if not owner:
        return False
    try:
        process = psutil.Process(int(owner["pid"]))
        return abs(process.create_time() - float(owner["create_time"])) < 0.01 and (
            process.status() != psutil.STATUS_ZOMBIE
        )
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


class PortMap:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def from_environment(cls, environment: dict[str, str] | None = None) -> PortMap | None:
        where = (environment if environment is not None else os.environ).get(PORT_MAP_VARIABLE)
        return cls(Path(where)) if where else None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                document: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                document = {}
            yield document
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(document, indent=1), encoding="utf-8")
            os.replace(temporary, self.path)

    def reach(self, port: int) -> int:
        """The real port the agent connects to for this simulated port (nothing may listen there yet)."""
        with self._locked() as document:
            entry = document.setdefault(str(port), {"real": free_real_port(), "owner": None})
            return int(entry["real"])

    def claim(self, port: int, pid: int, create_time: float, fresh: bool = False) -> int:
        """The real port to bind for this simulated port, recorded as held by (pid, create_time).
        ``fresh``: the recorded real port was taken by something else; pick a new one."""
        with self._locked() as document:
            entry = document.get(str(port))
            owner = entry.get("owner") if entry else None
            if entry is not None and _alive(owner) and owner is not None and int(owner["pid"]) != pid:
                raise SimulatedPortBusy(f"simulated port {port} is held by pid {owner['pid']}")
            if entry is None or fresh:
                entry = {"real": free_real_port()}
            entry["owner"] = {"pid": pid, "create_time": create_time}
            document[str(port)] = entry
            return int(entry["real"])

    def reach_url(self, url: str) -> str:
        """``url`` with a loopback host's port replaced by the real one; other hosts are left alone."""
        scheme, separator, rest = url.partition("://")
        if not separator:
            scheme, rest = "", url
        authority, slash, path = rest.partition("/")
        host, colon, port = authority.rpartition(":")
        if not colon or not port.isdigit() or host.strip("[]") not in LOOPBACK_NAMES:
            return url
        real = f"{host}:{self.reach(int(port))}{slash}{path}"
        return f"{scheme}://{real}" if separator else real
