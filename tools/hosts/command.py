"""Run one command to completion in its own process group, with a timeout and capped output.

Standard library only, and Python 3.8 at run time (annotations are not evaluated): the local host and the
remote helper (:mod:`tools.hosts.remote`) both use it, so a
command behaves the same wherever it runs. On timeout the whole group is killed; output keeps its first and
last bytes with a marker in between.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO


class CappedBuffer:
    """Keeps the first and last ``cap // 2`` bytes of a stream and counts what was dropped."""

    def __init__(self, cap: int) -> None:
        self.head_cap = max(cap // 2, 1)
        self.tail_cap = max(cap - self.head_cap, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.tail_cap:
            excess = len(self.tail) - self.tail_cap
            self.dropped += excess
            del self.tail[:excess]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() if self.dropped else b""
        return bytes(self.head + middle + self.tail).decode("utf-8", errors="replace")


@dataclass
class Completed:
    exit_code: int | None  # None: timed out or could not start
    stdout: str
    stderr: str
    timed_out: bool
    duration_seconds: float


def _drain(stream: IO[bytes], buffer: CappedBuffer) -> None:
    while True:
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            return
        buffer.feed(chunk)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_command(
    argv: list[str],
    *,
    timeout: float,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    environment: dict[str, str] | None = None,
    input_bytes: bytes | None = None,
    output_cap_bytes: int = 1_000_000,
    on_start: Callable[[int], None] = lambda pgid: None,
) -> Completed:
    """Run ``argv`` (environment: this process's plus ``env``, or exactly ``environment`` when given);
    ``on_start`` receives the group id, so a caller that goes away can kill the group."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=environment if environment is not None else {**os.environ, **(env or {})},
            start_new_session=True,
            stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as error:
        return Completed(None, "", f"could not start {argv[0]}: {error}", False, time.monotonic() - started)
    on_start(process.pid)
    buffers = (CappedBuffer(output_cap_bytes), CappedBuffer(output_cap_bytes))
    assert process.stdout is not None and process.stderr is not None
    readers = [
        threading.Thread(target=_drain, args=(process.stdout, buffers[0]), daemon=True),
        threading.Thread(target=_drain, args=(process.stderr, buffers[1]), daemon=True),
    ]
    for reader in readers:
        reader.start()
    if input_bytes is not None and process.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(input_bytes)
            process.stdin.close()
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(process.pid)
        process.wait()
    for reader in readers:
        reader.join(timeout=2.0)  # a detached grandchild may hold the pipe open; do not wait on it
    process.stdout.close()
    process.stderr.close()
    return Completed(
        None if timed_out else process.returncode,
        buffers[0].text(),
        buffers[1].text(),
        timed_out,
        time.monotonic() - started,
    )
