"""Telling a slow load from a hang.

Activity is any of: new log lines, CPU time or I/O of the process tree rising, GPU memory changing.
Large MoE models take 7-20 minutes to load, often with long silent stretches, so only the absence of
every signal for ``hang_after_seconds`` means "hung". One refinement: right after distributed/NCCL
initialisation, CPU time alone does not count, because a stuck collective keeps NCCL threads spinning.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tools.hosts.base import ProcessStatus

IO_THRESHOLD_BYTES = 64 * 1024
GPU_THRESHOLD_MIB = 256
CPU_SHARE_THRESHOLD = 0.05  # of one core


class ActivityMonitor:
    def __init__(self, hang_after_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.hang_after_seconds = hang_after_seconds
        self.clock = clock
        self.last_activity = clock()
        self.signals_seen: set[str] = set()
        self._previous: ProcessStatus | None = None
        self._previous_at = self.last_activity
        self._previous_gpu: int | None = None

    def observe(
        self, status: ProcessStatus, new_log_lines: int, gpu_memory_mib: list[int] | None, nccl_init_stage: bool = False
    ) -> list[str]:
        """Record one observation; return the activity signals seen in it."""
        now = self.clock()
        signals: list[str] = []
        if new_log_lines:
            signals.append("log")
        previous = self._previous
        if previous is not None and status.alive:
            elapsed = max(now - self._previous_at, 1e-6)
            cpu_used = (status.cpu_seconds or 0.0) - (previous.cpu_seconds or 0.0)
            if not nccl_init_stage and cpu_used >= max(0.02, CPU_SHARE_THRESHOLD * elapsed):
                signals.append("cpu")
            moved = sum(
                (getattr(status, field) or 0) - (getattr(previous, field) or 0)
                for field in ("read_bytes", "write_bytes")
            )
            if moved >= IO_THRESHOLD_BYTES:
                signals.append("io")
        if gpu_memory_mib is not None:
            total = sum(gpu_memory_mib)
            if self._previous_gpu is not None and abs(total - self._previous_gpu) >= GPU_THRESHOLD_MIB:
                signals.append("gpu_memory")
            self._previous_gpu = total
        self._previous, self._previous_at = status, now
        if signals:
            self.last_activity = now
            self.signals_seen.update(signals)
        return signals

    @property
    def quiet_seconds(self) -> float:
        return self.clock() - self.last_activity

    @property
    def hung(self) -> bool:
        return self.quiet_seconds >= self.hang_after_seconds
