"""Timed stand-ins for the loop's parts, for the loop-overhead benchmark.

Each is a subclass (or a wrapper) that adds up how long its calls took into a shared :class:`Clock`;
none changes what the part does. The loop itself is the real :class:`agent.loop.Agent`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.actions import Decision, Observation
from agent.journal import JOURNAL_FILE, Journal
from agent.policies.base import PolicyView
from agent.policies.scripted import ScriptedPolicy
from agent.state import ProjectState
from agent.store import StateStore
from agent.stuck import StuckDetector
from benchmarks.loop_workload import StoreResultTool
from tools.base import ToolContext, ToolRegistry, ToolResult
from tools.catalog import default_tools


@dataclass
class StepTiming:
    """One step, in seconds: the whole step (wall and CPU) and the parts inside it."""

    wall: float
    cpu: float
    decide: float
    decide_cpu: float
    tools: float
    tools_cpu: float
    saves: list[float]
    saves_cpu: list[float]
    journal: list[float]
    schemas: float
    stuck: float

    @property
    def overhead_wall(self) -> float:
        return self.wall - self.decide - self.tools

    @property
    def overhead_cpu(self) -> float:
        return self.cpu - self.decide_cpu - self.tools_cpu

    @property
    def other_wall(self) -> float:
        return self.overhead_wall - sum(self.saves) - sum(self.journal) - self.schemas - self.stuck


@dataclass
class Clock:
    """Time spent in each part of the current step."""

    decide: list[float] = field(default_factory=lambda: [0.0, 0.0])
    tools: list[float] = field(default_factory=lambda: [0.0, 0.0])
    saves: list[tuple[float, float]] = field(default_factory=list)
    journal: list[float] = field(default_factory=list)
    schemas: float = 0.0
    stuck: float = 0.0

    def reset(self) -> None:
        self.decide, self.tools, self.saves, self.journal = [0.0, 0.0], [0.0, 0.0], [], []
        self.schemas = self.stuck = 0.0

    def step(self, wall: float, cpu: float) -> StepTiming:
        return StepTiming(
            wall=wall,
            cpu=cpu,
            decide=self.decide[0],
            decide_cpu=self.decide[1],
            tools=self.tools[0],
            tools_cpu=self.tools[1],
            saves=[item[0] for item in self.saves],
            saves_cpu=[item[1] for item in self.saves],
            journal=list(self.journal),
            schemas=self.schemas,
            stuck=self.stuck,
        )


class _Span:
    """Wall and CPU time of a block: ``with _Span() as span: ...; span.wall, span.cpu``."""

    def __enter__(self) -> _Span:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


class TimedJournal(Journal):
    def __init__(self, path: Path, clock: Clock) -> None:
        super().__init__(path)
        self.clock = clock

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        with _Span() as span:
            entry = super().record(kind, **fields)
        self.clock.journal.append(span.wall)
        return entry


class TimedStore(StateStore):
    def __init__(self, state_dir: Path, clock: Clock) -> None:
        super().__init__(state_dir)
        self.clock = clock
        self._journal = TimedJournal(state_dir / JOURNAL_FILE, clock)  # the store creates it lazily otherwise

    def save(self, state: ProjectState) -> None:
        with _Span() as span:
            super().save(state)
        self.clock.saves.append((span.wall, span.cpu))


class TimedRegistry(ToolRegistry):
    def __init__(self, clock: Clock) -> None:
        super().__init__([*default_tools(), StoreResultTool()])
        self.clock = clock

    def execute(self, name: str, raw_arguments: dict[str, Any] | str, context: ToolContext) -> ToolResult:
        with _Span() as span:
            result = super().execute(name, raw_arguments, context)
        self.clock.tools[0] += span.wall
        self.clock.tools[1] += span.cpu
        return result

    def schemas(self) -> list[dict[str, Any]]:
        with _Span() as span:
            schemas = super().schemas()
        self.clock.schemas += span.wall
        return schemas


class TimedStuckDetector(StuckDetector):
    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock

    def check(self, state: ProjectState, observations: list[Observation]) -> str | None:
        with _Span() as span:
            nudge = super().check(state, observations)
        self.clock.stuck += span.wall
        return nudge


class TimedPolicy:
    name = "scripted"

    def __init__(self, inner: ScriptedPolicy, clock: Clock) -> None:
        self.inner, self.clock = inner, clock

    def decide(self, view: PolicyView) -> Decision:
        with _Span() as span:
            decision = self.inner.decide(view)
        self.clock.decide[0] += span.wall
        self.clock.decide[1] += span.cpu
        return decision
