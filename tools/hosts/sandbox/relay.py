"""Loopback relays: the only network a confined command has, to the engines the agent started.

A confined command lives in a network namespace of its own, so the host's loopback (where the engines
listen) is out of reach. For each allowed port, the agent listens on a Unix socket in a directory bound
into the sandbox (:class:`HostRelay`), and inside the sandbox this file, run as a script before the
command, listens on ``127.0.0.1:PORT`` and carries each connection over that socket. Nothing else
crosses: no other port, no other address. The script part uses the standard library only, because it
runs in the sandbox under ``python -I``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

SOCKET_NAME = "port-{port}.sock"


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def bridge(first: socket.socket, second: socket.socket) -> None:
    """Carry bytes both ways until both sides are done, then close both."""
    other = threading.Thread(target=_pump, args=(second, first), daemon=True)
    other.start()
    _pump(first, second)
    other.join()
    first.close()
    second.close()


def _serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return  # the listener was closed
        try:
            upstream = connect()
        except OSError:
            client.close()
            continue
        threading.Thread(target=bridge, args=(client, upstream), daemon=True).start()


class HostRelay:
    """The agent's side: one Unix socket per port in ``directory``, each leading to ``127.0.0.1:PORT``, or to
    the port ``targets`` names for it."""

    def __init__(self, directory: Path, ports: list[int], targets: dict[int, int] | None = None) -> None:
        targets = targets or {}
        self.directory, self.listeners = directory, []
        for port in ports:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(directory / SOCKET_NAME.format(port=port)))
            listener.listen(64)
            self.listeners.append(listener)

            def connect(port: int = targets.get(port, port)) -> socket.socket:
                return socket.create_connection(("127.0.0.1", port), timeout=None)

            threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()

    def close(self) -> None:
        for listener in self.listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()


def _inside(socket_dir: str, ports: list[int], argv: list[str]) -> int:
    """The sandbox's side: listen on each loopback port, then run the command and return its exit code."""
    for port in ports:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)

        def connect(port: int = port) -> socket.socket:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(os.path.join(socket_dir, SOCKET_NAME.format(port=port)))
            return upstream

        threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()
    command = subprocess.Popen(argv)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: command.send_signal(number))
    code = command.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="loopback relay inside a sandbox")
    parser.add_argument("--socket-dir", required=True)
    parser.add_argument("--ports", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    sys.exit(_inside(options.socket_dir, [int(port) for port in options.ports.split(",")], command))
