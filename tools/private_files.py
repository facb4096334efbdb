"""Files only their owner can read: what the agent writes into its state directory (mode 0600, directories
0700), so that a run's record, outputs and backups are not open to other users of the machine."""

from __future__ import annotations

import os
from pathlib import Path


def private_directory(path: Path) -> Path:
    """Create ``path`` if needed and make it accessible to its owner only (0700)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` (replacing it), with ``mode`` from the moment the file exists."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode & 0o600)
    try:
        os.fchmod(descriptor, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
