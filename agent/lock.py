"""One agent per state directory: an exclusive ``flock`` on ``agent.lock``, which holds the owner's PID.

The kernel drops the lock when its holder dies, so a lock file left by a killed agent is simply taken
over by the next one; the PID written inside is only for the message shown to a second agent.
The file descriptor is not inherited by child processes, so engines started by the agent never keep
the directory locked after the agent exits.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from agent.events import StateDirectoryLocked, UsageError

LOCK_FILE = "agent.lock"


class StateDirectoryLock:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / LOCK_FILE
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`StateDirectoryLocked` naming the PID that holds it."""
        try:
            self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            reason = error.strerror or str(error)
            raise UsageError(f"cannot lock state directory {self.state_dir}: {reason}") from None
        if not _try_lock(descriptor, attempts=5):  # a few tries: `agent status` probes it for a moment
            holder = _read_pid(descriptor)
            os.close(descriptor)
            raise StateDirectoryLocked(str(self.state_dir), holder)
        try:
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
            os.fsync(descriptor)
        except OSError:
            pass  # a full disk: the lock is held all the same; the PID only tells a second agent who holds it
        self._descriptor = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.ftruncate(self._descriptor, 0)
            os.close(self._descriptor)  # closing drops the flock
            self._descriptor = None

    @property
    def held(self) -> bool:
        return self._descriptor is not None

    def __enter__(self) -> StateDirectoryLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()


def _try_lock(descriptor: int, attempts: int) -> bool:
    for attempt in range(attempts):
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < attempts:
                time.sleep(0.02)
    return False


def _read_pid(descriptor: int) -> int | None:
    try:
        text = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def holder_pid(state_dir: Path) -> int | None:
    """The PID of the agent holding the state directory now, or None when no agent holds it."""
    path = state_dir / LOCK_FILE
    try:
        descriptor = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_pid(descriptor) or -1
    finally:
        os.close(descriptor)  # also drops a lock taken just to test
    return None
