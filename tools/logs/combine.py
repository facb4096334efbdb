"""Rules first, the learned model where the rules name no cause.

Where the rules (:mod:`tools.logs.decide`, :mod:`tools.logs.lifecycle`) name a failure class, it
stays: on logs nobody had written rules from (the first measurements of the blind sets) a class the
rules named was right far more often than the model. Where the rules found an error but could not
explain it (``unknown`` with a raw confidence below ``RULES_UNSURE``: no rule matched, or the best was
too weak), the learned model (:mod:`tools.logs.learned`) names its likeliest failure class, with a
confidence calibrated on its own bands (how often the model was right at that probability with the
log's thread left out of its training); below the threshold the class stays ``unknown`` and the
model's two likeliest classes become the alternatives, with the features behind them as why. Where
the rules named a class, the model's other likely classes become its alternatives. Logs without
failure (``healthy``/``loading``) never reach here: the model cannot turn a healthy or loading log
into a failure.
"""

from __future__ import annotations

from dataclasses import replace

from tools.logs.calibration import Calibration
from tools.logs.decide import Decision
from tools.logs.features import describe
from tools.logs.learned import ClassScore
from tools.logs.library import SignatureLibrary
from tools.logs.models import Alternative

RULES_UNSURE = 0.5
LIKELY = 0.1  # a class the model gives less is not offered as an alternative to a named class


def model_why(score: ClassScore) -> str:
    """Why the model favours a class: its probability and the features that favour the class most."""
    supported = f", from {', '.join(describe(feature) for feature in score.support)}" if score.support else ""
    return f"the learned model gives {score.diagnosis_class} probability {score.probability:.2f}{supported}"


def _alternatives(scores: list[ClassScore], calibration: Calibration, line_number: int | None) -> list[Alternative]:
    """The model's classes as alternatives: the likeliest with its calibrated confidence (how often the
    model's first choice was right at that probability), the others with their probability."""
    return [
        Alternative(
            diagnosis_class=score.diagnosis_class,
            confidence=calibration.calibrate_model(score.probability) if rank == 0 else round(score.probability, 2),
            why=model_why(score),
            line_number=line_number,
        )
        for rank, score in enumerate(scores)
    ]


def _merge(first: list[Alternative], second: list[Alternative], decided: str) -> list[Alternative]:
    merged: dict[str, Alternative] = {}
    for alternative in [*first, *second]:
        if alternative.diagnosis_class not in (decided, "unknown") and alternative.diagnosis_class not in merged:
            merged[alternative.diagnosis_class] = alternative
    return list(merged.values())[:2]


def combine(
    decision: Decision,
    scores: list[ClassScore],
    calibration: Calibration,
    numbers: list[int | None],
    library: SignatureLibrary,
) -> Decision:
    """The decision once the model's scores are weighed against the rules' (see the module docstring)."""
    if not scores:
        return decision
    line_number = numbers[decision.index] if decision.index is not None else None
    top = scores[0]
    every = _alternatives(scores, calibration, line_number)
    likely = [alternative for alternative, score in zip(every, scores, strict=True) if score.probability >= LIKELY]
    unexplained = decision.diagnosis_class == "unknown" and decision.raw_confidence < RULES_UNSURE
    if not unexplained or top.diagnosis_class == "unknown":
        offered = every if decision.diagnosis_class == "unknown" else likely
        return replace(decision, alternatives=_merge(decision.alternatives, offered, decision.diagnosis_class))
    why = model_why(top)
    decided = replace(
        decision,
        diagnosis_class=top.diagnosis_class,
        raw_confidence=round(top.probability, 2),
        confidence=calibration.calibrate_model(top.probability),
        summary=f"No rule explains the error; {why}.",
        why=why,
        remedies=list(library.class_remedies.get(top.diagnosis_class, ["inspect_traceback"])),
        signature=None,
        alternatives=_merge(likely[1:], decision.alternatives, top.diagnosis_class),
        decided_by="model",
    )
    if decided.confidence >= calibration.threshold:
        return decided
    alternatives = _merge(every[1:], decision.alternatives, top.diagnosis_class)
    return demote(replace(decided, alternatives=alternatives), line_number)


def demote(decision: Decision, line_number: int | None) -> Decision:
    """A model decision below the threshold: ``unknown``, with the model's class first among the likeliest."""
    first = Alternative(
        diagnosis_class=decision.diagnosis_class,
        confidence=decision.confidence,
        why=decision.why,
        line_number=line_number,
    )
    return replace(
        decision,
        diagnosis_class="unknown",
        summary=f"Not sure enough to name a cause (calibrated confidence {decision.confidence:.2f}); most likely "
        f"{decision.diagnosis_class}: {decision.why}.",
        remedies=["inspect_traceback"],
        alternatives=[first, *decision.alternatives[:1]],
    )
