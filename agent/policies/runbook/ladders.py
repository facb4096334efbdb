"""Remedy ladders: the next change for a diagnosed failure, whether the last one helped, and taking back one
that did not.

Candidates for a failure class, in order: the engine's own advice that names a value (a backend, a
context length, a flag to add), the library's remedies for the class, then the rest of the engine's
advice (variables; directions the library does not cover). Advice for debugging (``CUDA_LAUNCH_BLOCKING``,
``NCCL_DEBUG``) is not a remedy. A step helped when the next failure came later in start-up, was a new
problem, or was the same one with less memory missing; a step that helped is repeated while it stays
within its field's bounds, and a step that did not help is reverted before the next is tried.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from agent.policies.runbook.progress import Attempt, RunbookProgress, Step
from agent.policies.runbook.remedies import applicable, apply_remedy, for_device, restore, touched, value_at
from agent.state import ProjectState
from tools.logs.diagnose import Diagnosis
from tools.logs.phase import PHASE_ORDER

DEBUG_VARIABLES = {"CUDA_LAUNCH_BLOCKING", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "TORCH_USE_CUDA_DSA"}
MAX_REPEATS = 4  # one step at most this many times in a row, even while it helps
LOWEST = {"cuda_graph_max_bs": 8, "max_running_requests": 8, "context_length": 2048}
HIGHEST_FRACTION = 0.95
_ALLOCATE = re.compile(r"Tried to allocate (?P<size>\d+(?:\.\d+)?) ?(?P<unit>[KMG]i?B)")


class Candidate(BaseModel):
    id: str
    text: str
    action: dict[str, Any]

    @property
    def repeatable(self) -> bool:
        return set(self.action) <= {"adjust_flag", "scale_flag"}


def _engine_candidates(diagnosis: Diagnosis) -> tuple[list[Candidate], list[Candidate]]:
    """The engine's advice as (names a value, everything else), debugging advice left out."""
    specific: list[Candidate] = []
    other: list[Candidate] = []
    for hint in diagnosis.engine_hints:
        action = hint.action
        if not action or set(action.get("set_env") or {}) & DEBUG_VARIABLES:
            continue
        candidate = Candidate(
            id=f"engine:{hint.setting}:{hint.direction}", text=f"the engine says: {hint.evidence[:200]}", action=action
        )
        names_a_value = "add_flags" in action or any(
            not isinstance(value, bool) for value in (action.get("set_flag") or {}).values()
        )
        (specific if names_a_value else other).append(candidate)
    return specific, other


def candidates(diagnosis: Diagnosis) -> list[Candidate]:
    """Every change worth trying for this failure, in order, each action once."""
    specific, other = _engine_candidates(diagnosis)
    library = [
        Candidate(id=remedy.id, text=remedy.text, action=remedy.action)
        for remedy in diagnosis.remedies
        if applicable(remedy.action)
    ]
    covered = {field for candidate in library for field in touched(candidate.action)}
    other = [item for item in other if "set_env" in item.action or not set(touched(item.action)) <= covered]
    found: dict[str, Candidate] = {}
    for candidate in [*specific, *library, *other]:
        found.setdefault(json.dumps(candidate.action, sort_keys=True), candidate)
    return list(found.values())


def shortfall_gib(diagnosis: Diagnosis) -> float | None:
    """Memory the failing allocation lacked, when the log says ("Tried to allocate 2.41 GiB")."""
    root = diagnosis.root_cause.message if diagnosis.root_cause else ""
    for text in (diagnosis.key_line or "", root, *diagnosis.evidence):
        match = _ALLOCATE.search(text)
        if match:
            size = float(match["size"])
            return size / {"K": 1024**2, "M": 1024, "G": 1}[match["unit"][0]]
    return None


def _phase_index(phase: str | None) -> int:
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else 0


def helped(before: Attempt, after: Attempt) -> bool:
    """Whether the launch ``after`` (with the step) got further than the failure ``before`` it addressed."""
    if after.outcome == "ready":
        return True
    if _phase_index(after.phase) != _phase_index(before.phase):
        return _phase_index(after.phase) > _phase_index(before.phase)
    if after.diagnosis != before.diagnosis:
        return True  # the old failure is gone at the same point: a new problem
    if before.shortfall_gib is not None and after.shortfall_gib is not None:
        return after.shortfall_gib < 0.95 * before.shortfall_gib
    return False


def _floor_fraction(state: ProjectState, progress: RunbookProgress) -> float:
    """The lowest memory fraction that still leaves the weights some KV cache on each GPU."""
    gpus = state.environment.gpus
    size, tp = state.model.size_gib, int(progress.base_config.get("tp_size") or 1)
    if not gpus or not size:
        return 0.5
    per_gpu = min(gpu.memory_total_mib for gpu in gpus) / 1024
    return min(0.9, size / max(1, tp) / per_gpu + 0.08)


def within_bounds(state: ProjectState, progress: RunbookProgress, config: dict[str, Any]) -> bool:
    for field, lowest in LOWEST.items():
        value = config.get(field)
        if isinstance(value, int | float) and value < lowest:
            return False
    fraction = config.get("mem_fraction")
    if isinstance(fraction, int | float):
        return _floor_fraction(state, progress) <= fraction <= HIGHEST_FRACTION
    return True


def judge_last_step(state: ProjectState, progress: RunbookProgress, attempt: Attempt) -> Step | None:
    """Give the step this attempt tried its verdict; revert it when it did not help. Returns the step."""
    step = next((item for item in reversed(progress.steps) if item.attempt == attempt.number), None)
    before = next((item for item in reversed(progress.attempts) if item.number < attempt.number), None)
    if step is None or step.verdict != "pending" or before is None:
        return None
    if helped(before, attempt):
        step.verdict = "helped"
        return step
    progress.base_config = restore(progress.base_config, step.before)
    step.verdict = "reverted"
    where = f"still {attempt.diagnosis} at {attempt.phase}" if attempt.diagnosis else f"{attempt.outcome}"
    progress.changes.append(f"reverted {', '.join(step.changes)}: it did not help ({where})")
    state.add_finding(f"attempt {attempt.number}: {', '.join(step.changes)} did not help ({where}); reverted")
    return step


def _times_in_a_row(progress: RunbookProgress, step: Step) -> int:
    count = 0
    for item in reversed(progress.steps):
        if item.remedy != step.remedy:
            break
        count += 1
    return count


def _try(
    state: ProjectState, progress: RunbookProgress, candidate: Candidate
) -> tuple[Candidate, dict[str, Any], list[str]] | None:
    action = for_device(candidate.action, progress.base_config, progress.cpu_kv_space_max_gib)
    new_config, changes = apply_remedy(progress.base_config, action, progress.engine_settings)
    return (candidate, new_config, changes) if changes and within_bounds(state, progress, new_config) else None


def remember(progress: RunbookProgress, klass: str, found: list[Candidate]) -> list[Candidate]:
    """The ladder of a class: the options of its first failure, plus any new ones later failures offer."""
    known = [Candidate.model_validate(item) for item in progress.ladders.get(klass, [])]
    ids = {item.id for item in known}
    known += [item for item in found if item.id not in ids]
    progress.ladders[klass] = [item.model_dump() for item in known]
    return known


def next_step(
    state: ProjectState, progress: RunbookProgress, klass: str, last: Step | None
) -> tuple[Candidate, dict[str, Any], list[str]] | None:
    """The next change for a failure of class ``klass``: the last step again when it helped and the same
    failure remains, else the first untried option. (candidate, new config, change descriptions)."""
    if last is not None and last.verdict == "helped" and last.diagnosis == klass:
        again = Candidate(id=last.remedy, text=last.text, action=last.action)
        if again.repeatable and _times_in_a_row(progress, last) < MAX_REPEATS:
            result = _try(state, progress, again)
            if result is not None:
                return result
    tried = progress.tried.setdefault(klass, [])
    for item in progress.ladders.get(klass, []):
        candidate = Candidate.model_validate(item)
        if candidate.id in tried:
            continue
        tried.append(candidate.id)
        result = _try(state, progress, candidate)
        if result is not None:
            return result
    return None


def take_step(
    progress: RunbookProgress, klass: str, candidate: Candidate, new_config: dict[str, Any], changes: list[str]
) -> Step:
    """Apply the change to the base config, remembering what it replaced."""
    action = for_device(candidate.action, progress.base_config, progress.cpu_kv_space_max_gib)
    before = {field: value_at(progress.base_config, field) for field in touched(action)}
    progress.base_config = new_config
    step = Step(
        diagnosis=klass,
        remedy=candidate.id,
        text=candidate.text,
        action=candidate.action,
        before=before,
        changes=changes,
        attempt=len(progress.attempts) + 1,
    )
    progress.steps.append(step)
    return step
