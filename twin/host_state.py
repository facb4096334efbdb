"""What has happened on a simulated host so far, kept in its directory so every stand-in process sees it.

- its clock: simulated seconds since the host was set up (``clock.json``: the real time it started);
- engine starts: each engine stand-in that gets past its flags takes the next number (``launches.json``);
- faults that struck mid-run (``faults.json``), which the probe, ``nvidia-smi`` and ``dmesg`` then report;
- the kernel log lines written since (``kernel.log``): Xid reports, OOM-killer kills.

Updates are made under one file lock (``host.lock``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from twin.scenario import GpuFault, Scenario


class HostState:
    def __init__(self, root: Path, scenario: Scenario) -> None:
        self.root, self.scenario = root, scenario

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "host.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _read(self, name: str) -> dict[str, Any]:
        try:
            document = json.loads((self.root / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return document if isinstance(document, dict) else {}

    def _write(self, name: str, document: dict[str, Any]) -> None:
        temporary = self.root / f"{name}.tmp"
        temporary.write_text(json.dumps(document), encoding="utf-8")
        os.replace(temporary, self.root / name)

    # -- clock and engine starts ------------------------------------------------------------------------

    def start_clock(self) -> None:
        """Start the host's clock unless it runs already (a resumed run keeps the same host)."""
        with self._locked():
            if "started" not in self._read("clock.json"):
                self._write("clock.json", {"started": time.time()})

    def seconds(self) -> float:
        """Simulated seconds since the host was set up."""
        started = self._read("clock.json").get("started")
        if not isinstance(started, int | float):
            return 0.0
        return max(0.0, time.time() - started) * self.scenario.time_scale

    def next_launch(self) -> int:
        """Count one more engine start and return its number (1 for the first)."""
        with self._locked():
            count = int(self._read("launches.json").get("count", 0)) + 1
            self._write("launches.json", {"count": count})
            return count

    # -- faults and the kernel log ----------------------------------------------------------------------

    def strike(self, index: int, kernel_lines: list[str]) -> None:
        """Record that fault ``index`` happened now, with the kernel's report of it."""
        with self._locked():
            struck = self._read("faults.json")
            if str(index) not in struck:
                struck[str(index)] = self.seconds()
                self._write("faults.json", struck)
        self.log_kernel(kernel_lines)

    def log_kernel(self, lines: list[str]) -> None:
        stamp = self.seconds()
        with self._locked(), open(self.root / "kernel.log", "a", encoding="utf-8") as handle:
            for line in lines:
                handle.write(f"[{stamp:12.6f}] {line}\n")

    def kernel_lines(self) -> list[str]:
        try:
            return (self.root / "kernel.log").read_text(encoding="utf-8").splitlines()
        except OSError:
            return []

    def struck(self) -> set[int]:
        """Indexes of the faults that struck mid-run."""
        return {int(key) for key in self._read("faults.json")}

    def active_faults(self) -> list[tuple[int, GpuFault]]:
        """Faults in effect now: those present from the start, those that struck, those due by the clock."""
        struck = self._read("faults.json")
        now: float | None = None
        active = []
        for index, fault in enumerate(self.scenario.host.faults):
            if not fault.triggered or str(index) in struck:
                active.append((index, fault))
            elif fault.at_host_seconds is not None:
                now = self.seconds() if now is None else now
                if now >= fault.at_host_seconds:
                    active.append((index, fault))
        return active
