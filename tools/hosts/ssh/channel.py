"""The request channel to the remote helper: one ``ssh`` session running the helper, JSON lines each way.

Requests carry ids, so several threads (a tool, its timed-out predecessor, the benchmark's health checks) can
wait at once. When the session ends (the connection dropped, the helper died), every waiting request fails with
:class:`ChannelClosed`; the caller decides whether the operation may be repeated.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from tools.hosts.command import CappedBuffer

STDERR_CAP = 64 * 1024


class ChannelClosed(Exception):
    """The session to the helper ended; ``stderr`` holds what ssh or the helper said last, ``exit_code`` how the
    ssh process ended when known (255: ssh itself failed, e.g. to connect)."""

    def __init__(self, message: str, stderr: str = "", exit_code: int | None = None) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.exit_code = exit_code


class RemoteError(Exception):
    """The helper answered with an error; ``kind`` says which (see :mod:`tools.hosts.remote.errors`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None


class HelperChannel:
    """A started helper session. ``hello`` is the helper's first line (interpreter, home, clock)."""

    def __init__(self, argv: list[str], hello_timeout: float, on_close: Callable[[], None] = lambda: None) -> None:
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._stderr = CappedBuffer(STDERR_CAP)
        self._stderr_done = threading.Event()
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._numbers = itertools.count(1)
        self._closed = threading.Event()
        self._on_close = on_close
        self._hello = _Pending()
        threading.Thread(target=self._read_errors, daemon=True).start()
        threading.Thread(target=self._read_answers, daemon=True).start()
        if not self._hello.done.wait(hello_timeout) or self._hello.answer is None:
            self.close()
            self._closed.set()
            raise ChannelClosed("the helper did not start", self.stderr(), self._process.poll())
        self.hello: dict[str, Any] = self._hello.answer

    @property
    def alive(self) -> bool:
        return not self._closed.is_set()

    def stderr(self) -> str:
        """What ssh and the helper wrote on stderr (all of it once the session has ended)."""
        if self._closed.is_set():
            self._stderr_done.wait(2.0)
        return self._stderr.text()

    def exit_code(self) -> int | None:
        return self._process.poll()

    def _read_errors(self) -> None:
        assert self._process.stderr is not None
        try:
            while chunk := os.read(self._process.stderr.fileno(), 65536):
                self._stderr.feed(chunk)
        finally:
            self._process.stderr.close()
            self._stderr_done.set()

    def _read_answers(self) -> None:
        assert self._process.stdout is not None
        try:
            for line in self._process.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if "hello" in message:
                    self._hello.answer = message["hello"]
                    self._hello.done.set()
                    continue
                with self._lock:
                    waiting = self._pending.pop(message.get("id"), None)
                if waiting is not None:
                    waiting.answer = message
                    waiting.done.set()
        finally:
            self._process.stdout.close()
            self._shut()
            with self._lock, contextlib.suppress(OSError):
                if self._process.stdin is not None:
                    self._process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)  # the session has ended; collect ssh's exit status

    def _shut(self) -> None:
        self._closed.set()
        self._hello.done.set()
        with self._lock:
            waiting, self._pending = list(self._pending.values()), {}
        for item in waiting:
            item.done.set()  # answer stays None: the channel closed under it
        self._on_close()

    def call(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        """Send one request and wait for its answer; ChannelClosed, RemoteError, or TimeoutError."""
        if self._closed.is_set():
            raise ChannelClosed("the session to the helper is closed", self.stderr())
        number = next(self._numbers)
        waiting = _Pending()
        with self._lock:
            self._pending[number] = waiting
        data = (json.dumps({"id": number, "op": op, "args": args}, separators=(",", ":")) + "\n").encode()
        try:
            assert self._process.stdin is not None
            with self._lock:
                self._process.stdin.write(data)
                self._process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            self._shut()
            raise ChannelClosed("the session to the helper closed while sending", self.stderr()) from None
        if not waiting.done.wait(timeout):
            with self._lock:
                self._pending.pop(number, None)
            raise TimeoutError(f"no answer to {op} within {timeout:.0f} s")
        if waiting.answer is None:
            raise ChannelClosed(f"the session to the helper closed during {op}", self.stderr())
        if not waiting.answer.get("ok"):
            error = waiting.answer.get("error") or {}
            raise RemoteError(str(error.get("kind", "failed")), str(error.get("message", "")))
        return waiting.answer.get("result")

    def close(self) -> None:
        """End the session (the helper exits when its stdin closes); processes it spawned keep running."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._closed.wait(2)
