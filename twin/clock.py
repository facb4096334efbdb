"""Accelerated simulated time: ``scale`` simulated seconds pass per real second."""

from __future__ import annotations

import time


class SimClock:
    def __init__(self, scale: float) -> None:
        if scale <= 0:
            raise ValueError("time scale must be positive")
        self.scale = scale
        self._started = time.monotonic()

    def real_seconds(self, simulated: float) -> float:
        return max(0.0, simulated) / self.scale

    def sleep(self, simulated: float) -> None:
        time.sleep(self.real_seconds(simulated))

    def elapsed(self) -> float:
        """Simulated seconds since the clock was created."""
        return (time.monotonic() - self._started) * self.scale
