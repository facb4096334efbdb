"""What a launch plan is made of: failures at a phase, the memory budget, the drafter in use."""

from __future__ import annotations

from dataclasses import dataclass, field

from twin.engine.errors import crash_lines
from twin.rules import PHASES, Phase

INIT_MIB = 520  # CUDA context and NCCL buffers per GPU, held from process start
DRAFT_MIB = 1600  # a one-layer EAGLE-3 drafter and its buffers


@dataclass
class Failure:
    kind: str  # "crash", "hang", or "killed" (SIGKILL from the host's OOM killer: no lines of its own)
    phase: Phase
    lines: list[str]
    exit_code: int = 1
    progress: float = 0.0  # fraction of the phase done before the failure
    ignore_sigterm: bool = False
    source: str = "hardware"
    after_seconds: float = 0.0  # silent (or, while serving, still serving) this long before it happens
    fault: int | None = None  # the scenario fault that strikes at this moment (probe and dmesg report it)
    kernel_lines: list[str] = field(default_factory=list)  # what the kernel logs at this moment

    @property
    def order(self) -> tuple[int, float, float]:
        """Earlier failures happen first: by phase, then how far into it."""
        return PHASES.index(self.phase), self.progress, self.after_seconds


def crash(
    engine: str, phase: Phase, error: list[str], source: str, progress: float = 0.0, exit_code: int = 1
) -> Failure:
    """A start-up crash whose traceback ends in ``error``, in the engine's format."""
    return Failure(
        "crash", phase, crash_lines(engine, phase, error), exit_code=exit_code, progress=progress, source=source
    )


@dataclass
class MemoryPlan:
    gpus: list[int]
    total_mib: int = 0
    weights_mib: int = 0
    draft_mib: int = 0
    kv_mib: int = 0
    graph_mib: int = 0
    kv_tokens: int = 0
    failures: list[Failure] = field(default_factory=list)


@dataclass
class Drafter:
    path: str
    name: str
    per_position: float
