"""GPU memory bookkeeping of the simulated host.

Each simulated process that holds GPU memory (engine, drafter training) keeps a small JSON status
file ``<root>/gpu/<pid>.json`` up to date. The host adds up the files of processes that are still
alive; memory of a process that has exited is free again, as on a real GPU.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import psutil


def ledger_dir(sim_root: Path) -> Path:
    return sim_root / "gpu"


class GpuLedgerEntry:
    """The status file of the current process."""

    def __init__(self, sim_root: Path, pid: int | None = None) -> None:
        self.pid = pid or os.getpid()
        self.path = ledger_dir(sim_root) / f"{self.pid}.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.create_time = psutil.Process(self.pid).create_time()
        self.memory: dict[int, int] = {}
        self.phase = "starting"

    def update(self, memory: dict[int, int] | None = None, phase: str | None = None) -> None:
        if memory is not None:
            self.memory = dict(memory)
        if phase is not None:
            self.phase = phase
        document = {
            "pid": self.pid,
            "create_time": self.create_time,
            "phase": self.phase,
            "memory_mib": {str(index): used for index, used in self.memory.items()},
        }
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(document), encoding="utf-8")
        os.replace(temporary, self.path)

    def release(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _alive(pid: int, create_time: float) -> bool:
    try:
        process = psutil.Process(pid)
        return abs(process.create_time() - create_time) < 0.01 and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def memory_in_use(sim_root: Path, gpu_count: int, exclude_pid: int | None = None) -> list[int]:
    """MiB held per GPU by live simulated processes (stale files of dead processes are ignored)."""
    totals = [0] * gpu_count
    directory = ledger_dir(sim_root)
    if not directory.is_dir():
        return totals
    for path in directory.glob("*.json"):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            pid, create_time = int(document["pid"]), float(document["create_time"])
            memory = {int(key): int(value) for key, value in document["memory_mib"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid == exclude_pid or not _alive(pid, create_time):
            continue
        for index, used in memory.items():
            if 0 <= index < gpu_count:
                totals[index] += used
    return totals
