"""The file and network half of the Host contract for hosts whose files are the agent's own (local, simulated).

The same readers and write guard run on a remote host inside its helper (:mod:`tools.hosts.remote`), so a
log is read from its end and an edit is confined the same way wherever the file lives.
"""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

from tools.hosts.base import ConfinedFile, FileFacts, LineFilter, NetworkInterface
from tools.hosts.remote import network
from tools.logs.line_filter import compile_filter
from tools.logs.reader import SinceRead, TailRead, last_frame, read_last_lines, read_since
from tools.logs.window import LogWindow, read_window
from tools.patch.write_guard import confine, read_bytes, write_bytes_atomic


def file_facts(path: str) -> FileFacts | None:
    try:
        info = os.stat(os.path.expanduser(path))
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return FileFacts(size=info.st_size, age_seconds=max(time.time() - info.st_mtime, 0.0))


def last_lines(path: str, max_lines: int, max_bytes: int, line_filter: LineFilter | None) -> TailRead:
    keep = None if line_filter is None else compile_filter(line_filter.pattern, regex=line_filter.regex)
    return read_last_lines(
        Path(path).expanduser(),
        max_lines,
        max_bytes=max_bytes,
        keep=None if keep is None else lambda line: keep(last_frame(line)),
    )


def confined_read(raw_path: str, roots: list[str]) -> ConfinedFile:
    target = confine(raw_path, [Path(root) for root in roots])
    data, info = read_bytes(target)
    mode = stat.S_IMODE(info.st_mode)
    return ConfinedFile(path=str(target.path), data=data, inode=info.st_ino, device=info.st_dev, mode=mode)


def confined_write(raw_path: str, roots: list[str], data: bytes, expected: ConfinedFile | None) -> None:
    target = confine(raw_path, [Path(root) for root in roots])
    identity = None if expected is None else (expected.inode, expected.device)
    write_bytes_atomic(target, data, expected=identity)


def connect_error(address: str, port: int, timeout: float) -> str | None:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return None
    except OSError as error:
        return f"{type(error).__name__}: {error.strerror or error}"


class LocalFiles:
    """Host methods over the agent's own file system and network."""

    def file_facts(self, path: str) -> FileFacts | None:
        return file_facts(path)

    def read_last_lines(
        self, path: str, max_lines: int, *, max_bytes: int, line_filter: LineFilter | None = None
    ) -> TailRead:
        return last_lines(path, max_lines, max_bytes, line_filter)

    def read_since(self, path: str, offset: int, *, max_bytes: int) -> SinceRead:
        return read_since(Path(path).expanduser(), offset, max_bytes=max_bytes)

    def read_window(self, path: str, *, head_bytes: int, tail_bytes: int) -> LogWindow:
        return read_window(Path(path).expanduser(), head_bytes=head_bytes, tail_bytes=tail_bytes)

    def read_confined(self, raw_path: str, roots: list[str]) -> ConfinedFile:
        return confined_read(raw_path, roots)

    def write_confined(self, raw_path: str, roots: list[str], data: bytes, expected: ConfinedFile | None) -> None:
        confined_write(raw_path, roots, data, expected)

    def real_path(self, path: str) -> str:
        return os.path.realpath(path)

    def home(self) -> str:
        return str(Path.home())

    def connect_error(self, address: str, port: int, timeout: float = 1.0) -> str | None:
        return connect_error(address, port, timeout)

    def interfaces(self) -> list[NetworkInterface]:
        return [NetworkInterface.model_validate(item) for item in network.interfaces(None, {})]

    def route_to(self, address: str) -> tuple[str | None, str | None]:
        found = network.route(None, {"address": address})
        return found["device"], found["source"]

    def infiniband_ports(self) -> list[dict[str, str]]:
        return network.infiniband(None, {})

    def clock(self) -> float:
        return time.time()

    def listen(self, address: str, port: int, seconds: float) -> tuple[int | None, str | None]:
        answer = network.listen(None, {"address": address, "port": port, "seconds": seconds})
        return answer["port"], answer["error"]

    def stop_listening(self, port: int) -> None:
        network.stop_listening(None, {"port": port})
