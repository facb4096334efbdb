"""The helper's network operations, answered as this host sees its network: a TCP connection attempt, a short-lived
listener (so other hosts can test that they reach this one), the interfaces and their IPv4 addresses in the order
the system lists them, the route to an address, and the InfiniBand ports."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

IB_ROOT = "/sys/class/infiniband"


def connect(state: object, args: dict[str, Any]) -> dict[str, Any]:
    try:
        with socket.create_connection((str(args["address"]), int(args["port"])), timeout=float(args["timeout"])):
            return {"error": None}
    except OSError as error:
        return {"error": f"{type(error).__name__}: {error.strerror or error}"}


_LISTENERS: dict[int, threading.Event] = {}  # port -> set to close that listener early


def _hold(listener: socket.socket, seconds: float, stop: threading.Event) -> None:
    deadline = time.monotonic() + seconds
    with listener:
        while time.monotonic() < deadline and not stop.is_set():
            listener.settimeout(min(max(deadline - time.monotonic(), 0.01), 0.2))
            try:
                accepted, _ = listener.accept()
            except OSError:
                continue
            accepted.close()


def listen(state: object, args: dict[str, Any]) -> dict[str, Any]:
    """Bind ``address:port`` (port 0: any free one) and accept connections for ``seconds``, in the background."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((str(args.get("address", "0.0.0.0")), int(args.get("port", 0))))
        listener.listen(16)
    except OSError as error:
        listener.close()
        return {"error": f"{type(error).__name__}: {error.strerror or error}", "port": None}
    port = listener.getsockname()[1]
    stop = _LISTENERS[port] = threading.Event()
    threading.Thread(target=_hold, args=(listener, float(args.get("seconds", 10.0)), stop), daemon=True).start()
    return {"error": None, "port": port}


def stop_listening(state: object, args: dict[str, Any]) -> None:
    stop = _LISTENERS.pop(int(args["port"]), None)
    if stop is not None:
        stop.set()
        time.sleep(0.3)  # the holder notices within 0.2 s and closes the socket


def _ip_json(arguments: list[str]) -> Any:
    try:
        completed = subprocess.run(["ip", "-j", *arguments], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return json.loads(completed.stdout) if completed.returncode == 0 else None
    except ValueError:
        return None


def interfaces(state: object, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Every interface with its index, state and IPv4 addresses (``ip -j addr``), in index order."""
    listed = _ip_json(["-4", "addr", "show"]) or []
    found = {
        item.get("ifname"): {
            "name": item.get("ifname"),
            "index": item.get("ifindex"),
            "up": "UP" in (item.get("flags") or []) and item.get("operstate") != "DOWN",
            "addresses": [f"{entry['local']}/{entry['prefixlen']}" for entry in item.get("addr_info") or []],
        }
        for item in listed
    }
    for index, name in socket.if_nameindex():  # interfaces without an IPv4 address are listed too
        found.setdefault(name, {"name": name, "index": index, "up": None, "addresses": []})
    return sorted(found.values(), key=lambda item: item["index"] or 0)


def route(state: object, args: dict[str, Any]) -> dict[str, Any]:
    """The interface and source address this host uses to reach ``address``."""
    routes = _ip_json(["route", "get", str(args["address"])])
    if not routes:
        return {"device": None, "source": None}
    return {"device": routes[0].get("dev"), "source": routes[0].get("prefsrc")}


def infiniband(state: object, args: dict[str, Any]) -> list[dict[str, str]]:
    ports = []
    for device in sorted(os.listdir(IB_ROOT)) if os.path.isdir(IB_ROOT) else []:
        root = os.path.join(IB_ROOT, device, "ports")
        for port in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            facts = {"device": device, "port": port}
            for name in ("state", "link_layer"):
                try:
                    with open(os.path.join(root, port, name)) as handle:
                        facts[name] = handle.read().strip()
                except OSError:
                    facts[name] = ""
            ports.append(facts)
    return ports


def clock(state: object, args: dict[str, Any]) -> float:
    return time.time()


OPERATIONS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "connect": connect,
    "listen": listen,
    "stop_listening": stop_listening,
    "interfaces": interfaces,
    "route": route,
    "infiniband": infiniband,
    "clock": clock,
}
READING = {"connect", "interfaces", "route", "infiniband", "clock"}
