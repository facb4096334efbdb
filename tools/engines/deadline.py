"""When to stop waiting for a starting engine: progress decides, not a fixed timeout.

Hang detection (:mod:`tools.engines.activity`) ends the wait for an engine that shows no sign of life.
An engine that is alive and loading gets a deadline from its own measured rate: once the weight load
has reported a fraction done (``24/61 shards``), the projected load time is the time so far divided by
that fraction, and the deadline is that projection times :data:`SLACK`, plus the hang window, and never
less than the configured load timeout. After the weights are loaded, the projection is the load's own
duration. Without any measured rate the configured load timeout is the deadline. A caller may instead
fix the deadline outright.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SLACK = 1.5  # the engine may be this much slower than its own rate so far
MIN_FRACTION = 0.02  # below this a projection is mostly noise


class LoadDeadline:
    def __init__(
        self,
        base_seconds: float,
        hang_after_seconds: float,
        fixed: bool = False,
        clock: Callable[[], float] = time.monotonic,
        started_ago: float = 0.0,
    ) -> None:
        """``started_ago``: the engine started this long before the watch (watching it again): its rate is
        measured from its own start, and the base counts from now."""
        self.base_seconds = base_seconds + started_ago
        self.hang_after_seconds, self.fixed, self.clock = hang_after_seconds, fixed, clock
        self.started = clock() - started_ago
        self.fraction = 0.0
        self.fraction_at: float | None = None
        self.weights_done_at: float | None = None

    def observe_fraction(self, fraction: float) -> None:
        """The weight load reported ``fraction`` done (0..1) just now."""
        if fraction > self.fraction:
            self.fraction, self.fraction_at = min(fraction, 1.0), self.clock()

    def observe_weights_done(self) -> None:
        if self.weights_done_at is None:
            self.weights_done_at = self.clock()

    def projected_load_seconds(self) -> float | None:
        """The weight load's duration, measured or projected from its rate; None before any rate."""
        if self.weights_done_at is not None:
            return self.weights_done_at - self.started
        if self.fraction >= MIN_FRACTION and self.fraction_at is not None:
            return (self.fraction_at - self.started) / self.fraction
        return None

    def limit_seconds(self) -> float:
        """Seconds after the start at which waiting ends."""
        projected = self.projected_load_seconds()
        if self.fixed or projected is None:
            return self.base_seconds
        return max(self.base_seconds, projected * SLACK + self.hang_after_seconds)

    def due(self) -> bool:
        return self.clock() - self.started >= self.limit_seconds()

    def describe(self) -> str:
        """One line for people: how far the load is, what its rate projects, and the deadline."""
        elapsed = self.clock() - self.started
        projected = self.projected_load_seconds()
        where = f"{self.fraction:.0%} of the weights after {elapsed:.0f} s"
        if self.weights_done_at is not None:
            where = f"weights loaded in {projected:.0f} s"
        rate = f"; at this rate the load takes {projected:.0f} s" if projected and not self.weights_done_at else ""
        return f"{where}{rate}; waiting up to {self.limit_seconds():.0f} s"
