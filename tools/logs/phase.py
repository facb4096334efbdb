"""How far start-up got: the phase of the last milestone line in the log.

Milestones are data (``[[milestones]]`` in ``signatures.toml``): launch, distributed initialisation,
weights, the drafter, memory profiling and the KV cache, compilation, CUDA graphs, the HTTP server,
ready, and serving (batches and answered requests). The phase is that of the latest milestone line;
an error is read against it (a failure while the drafter loads points at the drafter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tools.logs.library import SignatureLibrary
from tools.logs.prefixes import split_line
from tools.logs.window import LogWindow

Phase = Literal[
    "not_started",
    "launch",
    "distributed_init",
    "weights",
    "weights_done",
    "drafter",
    "memory_profiling",
    "compile",
    "cuda_graph",
    "cuda_graph_done",
    "server",
    "ready",
    "serving",
]
PHASE_ORDER: tuple[Phase, ...] = (
    "not_started",
    "launch",
    "distributed_init",
    "weights",
    "weights_done",
    "drafter",
    "memory_profiling",
    "compile",
    "cuda_graph",
    "cuda_graph_done",
    "server",
    "ready",
    "serving",
)
_TAIL_CHARS = 64 * 1024
# Ray folds lines its workers repeat and prints the fold later ("... [repeated 2x across cluster]"): a summary of lines
# already logged, which tells that other workers got as far, never that the engine went back to an earlier step.
_RAY_REPEAT = "x across cluster]"


@dataclass(frozen=True)
class PhaseSeen:
    phase: Phase
    index: int | None  # line of the milestone


def _combined(library: SignatureLibrary) -> re.Pattern[str]:
    parts = [f"(?P<m{number}>{milestone.pattern})" for number, milestone in enumerate(library.milestones)]
    return re.compile("|".join(parts), re.MULTILINE)


def _stage(library: SignatureLibrary, match: re.Match[str]) -> Phase:
    name = match.lastgroup or "m0"
    return library.milestones[int(name[1:])].stage


def last_phase(window: LogWindow, library: SignatureLibrary, before: int | None = None) -> PhaseSeen:
    """The latest milestone (before line ``before`` when given), searching growing tails of the text."""
    regex = _combined(library)
    text = window.text if before is None else window.text[: window.text_start_of(before)]
    size = _TAIL_CHARS
    while True:
        start = max(len(text) - size, 0)
        last: tuple[Phase, int] | None = None  # stage and position of the latest milestone
        for match in regex.finditer(text, start):
            stage = _stage(library, match)
            line = window.lines[window.line_index_at(match.start())]
            if stage == "launch" and _quoted(line):
                continue
            if _RAY_REPEAT in line and last is not None and not reached(stage, last[0]):
                continue
            last = (stage, match.start())
        if last is not None:
            return PhaseSeen(last[0], window.line_index_at(last[1]))
        if start == 0:
            return PhaseSeen("not_started", None)
        size *= 8


def _quoted(line: str) -> bool:
    """A launch command inside a warning or error: the engine quoting a command line (vLLM names the process
    holding its port as it shuts down), not a new start."""
    return split_line(line).level in ("WARNING", "WARN", "ERROR", "CRITICAL")


def reached(phase: Phase, at_least: Phase) -> bool:
    return PHASE_ORDER.index(phase) >= PHASE_ORDER.index(at_least)


# Milestones the drafter's own loading prints after its own: its checkpoint's weights.
_DRAFTER_LOADING_STAGES = ("drafter", "weights", "weights_done")


def drafter_loading(window: LogWindow, library: SignatureLibrary, before: int) -> bool:
    """The drafter was loading when line ``before`` was written: its milestone is the last one, or only the loading
    of weights (the drafter's own checkpoint) came after it."""
    regex = _combined(library)
    text = window.text[: window.text_start_of(before)]
    stages = [_stage(library, match) for match in regex.finditer(text, max(len(text) - 8 * _TAIL_CHARS, 0))]
    if "drafter" not in stages:
        return False
    after = stages[len(stages) - 1 - stages[::-1].index("drafter") :]
    return all(stage in _DRAFTER_LOADING_STAGES for stage in after)
