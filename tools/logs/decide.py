"""Choosing the class from the evidence, and saying how sure that is.

The strongest evidence wins (priority, then raw confidence, then the earlier line). Its raw confidence
rises when another kind of evidence agrees and falls when a different class was almost as strong;
:mod:`tools.logs.calibration` then maps it to how often such scores were right on the corpus. A
failure class whose calibrated confidence is below the threshold becomes ``unknown``, keeping the
best key line and naming the two most likely classes with why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.logs.calibration import Calibration
from tools.logs.evidence import Evidence
from tools.logs.library import NO_FAILURE_CLASSES, DiagnosisClass
from tools.logs.models import Alternative, DecidedBy, Finding

AGREEMENT_BONUS = 0.05
CONTEST_MARGIN = 5  # priorities this close to the winner's make the decision contested
CONTEST_PENALTY = 0.1


@dataclass
class Decision:
    diagnosis_class: DiagnosisClass
    raw_confidence: float
    confidence: float
    index: int | None
    summary: str
    why: str
    remedies: list[str]
    signature: str | None = None
    alternatives: list[Alternative] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    decided_by: DecidedBy = "rules"
    lines_around: list[str] = field(default_factory=list)


def _strength(evidence: Evidence) -> tuple[int, float, int]:
    return evidence.priority, evidence.confidence, -(evidence.index if evidence.index is not None else 1 << 30)


def _best_per_class(evidence: list[Evidence]) -> list[Evidence]:
    best: dict[str, Evidence] = {}
    for item in evidence:
        current = best.get(item.diagnosis_class)
        if current is None or _strength(item) > _strength(current):
            best[item.diagnosis_class] = item
    return sorted(best.values(), key=_strength, reverse=True)


def _raw_confidence(winner: Evidence, evidence: list[Evidence], runner_up: Evidence | None) -> float:
    raw = winner.confidence
    sources = {item.source for item in evidence if item.diagnosis_class == winner.diagnosis_class}
    if len(sources) > 1:
        raw += AGREEMENT_BONUS
    if runner_up is not None and runner_up.priority >= winner.priority - CONTEST_MARGIN:
        raw -= CONTEST_PENALTY
    return round(min(max(raw, 0.05), 0.99), 2)


def decide(evidence: list[Evidence], calibration: Calibration, numbers: list[int | None]) -> Decision | None:
    """The failure class the evidence supports, or None when there is no failure evidence."""
    failures = [item for item in evidence if item.diagnosis_class not in NO_FAILURE_CLASSES]
    if not failures:
        return None
    ranked = _best_per_class(failures)
    winner, runner_up = ranked[0], (ranked[1] if len(ranked) > 1 else None)
    raw = _raw_confidence(winner, failures, runner_up)
    confidence = calibration.calibrate(raw)
    alternatives = [
        Alternative(
            diagnosis_class=item.diagnosis_class,
            confidence=calibration.calibrate(item.confidence),
            why=item.why,
            line_number=numbers[item.index] if item.index is not None else None,
        )
        for item in ranked[1:]
        if item.diagnosis_class != "unknown"
    ][:2]
    decision = Decision(
        winner.diagnosis_class,
        raw,
        confidence,
        winner.index,
        winner.summary,
        winner.why,
        list(winner.remedies),
        winner.signature,
        alternatives,
    )
    if winner.diagnosis_class != "unknown" and confidence < calibration.threshold:
        first = Alternative(
            diagnosis_class=winner.diagnosis_class,
            confidence=confidence,
            why=winner.why,
            line_number=numbers[winner.index] if winner.index is not None else None,
        )
        decision = Decision(
            "unknown",
            raw,
            confidence,
            winner.index,
            f"Not sure enough to name a cause (calibrated confidence {confidence:.2f}); most likely "
            f"{winner.diagnosis_class}: {winner.why}.",
            winner.why,
            ["inspect_traceback"],
            None,
            [first, *alternatives[:1]],
        )
    return decision
