"""The learned part of diagnosis: train it on the corpus, check the committed model, cross-validate it.

The model (``tools/logs/learned_model.json``) is trained on every log of the corpus's ``tune`` split
whose true class is a failure (the holdout split and any other part are never trained on). Its
features are those diagnosis extracts (:mod:`tools.logs.features`); the rules' decision of each log is
computed once, without the model, and the model is combined with it as diagnosis does
(:mod:`tools.logs.combine`).

Leave-one-thread-out cross-validation predicts how the model does on logs it has not seen: for each
source thread of the tune split the model is retrained without that thread's logs and classifies
them. Three figures come out of it:

- ``model_alone``: the model's likeliest class against the truth, on every failure log;
- ``combined``: diagnosis as it runs (the rules as they are now, the model where they name no cause).
  The rules were written while reading these logs, so this figure flatters them;
- ``first_measurements``: for the logs of a blind set, the rules' decision at that set's first
  measurement (recorded in the index, before any rule was written from those logs) combined with the
  cross-validated model: what the combination would have scored on the blind set. This is the figure
  that predicts the next blind set.

The model's calibration bands (``model_bands`` in ``tools/logs/calibration.toml``) are how often the
model's likeliest class was right at each probability, counted on the cross-validated predictions.

    python -m benchmarks.diagnosis_model              # the figures above (one JSON line)
    python -m benchmarks.diagnosis_model --write      # write the model and its calibration bands
    python -m benchmarks.diagnosis_model --check      # exit 1 when the committed files are stale
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any, cast, get_args

from benchmarks.common import REPO_ROOT, emit, machine, note
from benchmarks.diagnosis_corpus import CORPUS, entry_hints, load_part
from tools.logs.calibration import MODEL_BAND_EDGES, Band, Calibration, load_calibration, render_table
from tools.logs.combine import combine
from tools.logs.decide import Decision
from tools.logs.diagnose import Diagnoser, text_window
from tools.logs.learned import MODEL_FILE, ClassScore, Example, LearnedModel, render, train
from tools.logs.library import NO_FAILURE_CLASSES, DiagnosisClass, SignatureLibrary, load_library

MODEL_PATH = REPO_ROOT / "tools" / "logs" / MODEL_FILE
CALIBRATION_PATH = REPO_ROOT / "tools" / "logs" / "calibration.toml"
TRAINING_SPLIT = "tune"


@dataclass
class LabelledLog:
    id: str
    source: str
    truth: DiagnosisClass
    decision: Decision  # the rules' decision, without the model
    features: list[str] | None  # None: no error text, the model is not consulted
    numbers: list[int | None]
    first_class: DiagnosisClass | None = None
    first_raw_confidence: float | None = None
    blind_set: str | None = None  # "blind set 1", ... for logs with a recorded first measurement

    @property
    def failure(self) -> bool:
        return self.truth not in NO_FAILURE_CLASSES

    @property
    def trains(self) -> bool:
        """A failure log with error text: what the model learns from and is asked about."""
        return self.failure and self.features is not None


def diagnosis_class(value: str) -> DiagnosisClass:
    """A class name of the index, checked against the diagnosis vocabulary."""
    if value not in get_args(DiagnosisClass):
        raise ValueError(f"{value!r} is not a diagnosis class")
    return cast(DiagnosisClass, value)


def labelled_logs(corpus: Path = CORPUS, split: str = TRAINING_SPLIT) -> list[LabelledLog]:
    """The logs of one split with their rules' decision and features."""
    library = load_library()
    found = []
    for entry in load_part(corpus):
        if entry["split"] != split:
            continue
        window = text_window(Path(entry["path"]).read_text(encoding="utf-8", errors="replace"))
        diagnoser = Diagnoser(window, entry_hints(entry), library, LearnedModel())
        outcome = diagnoser.rules(None)
        note_text = str(entry.get("note", ""))
        found.append(
            LabelledLog(
                id=entry["id"],
                source=entry["source"],
                truth=diagnosis_class(entry["class"]),
                decision=outcome.decision,
                features=diagnoser.features(outcome),
                numbers=window.numbers,
                first_class=diagnosis_class(entry["first_class"]) if entry.get("first_class") else None,
                first_raw_confidence=entry.get("first_raw_confidence"),
                blind_set=note_text.split(",")[0] if entry.get("first_class") and note_text else None,
            )
        )
    return found


def training_examples(logs: list[LabelledLog]) -> list[Example]:
    """What the model learns from: the failure logs with error text."""
    return [Example(log.features, log.truth, log.source) for log in logs if log.trains and log.features is not None]


def train_on(logs: list[LabelledLog]) -> LearnedModel:
    examples = training_examples(logs)
    threads = len({example.source for example in examples})
    return train(
        examples,
        trained_on=f"diagnosis corpus, {TRAINING_SPLIT} split: {len(examples)} failure logs with error text "
        f"from {threads} threads",
    )


def final_decision(
    log: LabelledLog, scores: list[ClassScore], calibration: Calibration, library: SignatureLibrary, *, first: bool
) -> Decision:
    """What diagnosis reports: the rules' decision (as now, or at the first blind measurement when
    ``first``), combined with the model's scores for a failure."""
    decision = log.decision
    if first and log.first_class is not None and log.first_raw_confidence is not None:
        raw = log.first_raw_confidence
        decision = replace(
            decision,
            diagnosis_class=log.first_class,
            raw_confidence=raw,
            confidence=calibration.calibrate(raw),
            alternatives=[],
        )
    if decision.diagnosis_class in NO_FAILURE_CLASSES:
        return decision
    return combine(decision, scores, calibration, log.numbers, library)


def cross_validated_scores(logs: list[LabelledLog]) -> dict[str, list[ClassScore]]:
    """Each log's model scores from a model trained without the logs of its thread."""
    threads: dict[str, list[LabelledLog]] = defaultdict(list)
    for log in logs:
        threads[log.source].append(log)
    everything = train_on(logs)
    scores = {}
    for members in threads.values():
        left_out = training_examples(members)
        model = everything.without(left_out) if left_out else everything
        for log in members:
            scores[log.id] = model.posterior(log.features) if log.features is not None else []
    return scores


def _figures(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Accuracy overall and per true class of (truth, got) pairs."""
    per_class: dict[str, dict[str, int]] = {}
    for truth, got in pairs:
        figures = per_class.setdefault(truth, {"count": 0, "correct": 0})
        figures["count"] += 1
        figures["correct"] += truth == got
    correct = sum(truth == got for truth, got in pairs)
    return {
        "count": len(pairs),
        "correct": correct,
        "accuracy": round(correct / len(pairs), 3) if pairs else None,
        "per_class": dict(sorted(per_class.items())),
    }


def model_bands(logs: list[LabelledLog], scores: dict[str, list[ClassScore]]) -> list[Band]:
    """How often the model's likeliest class was right, per band of its probability."""
    bands = []
    for low, high in pairwise(MODEL_BAND_EDGES):
        hits = [
            scores[log.id][0].diagnosis_class == log.truth
            for log in logs
            if log.trains
            and scores[log.id]
            and (low <= scores[log.id][0].probability < high or (high == 1.0 and scores[log.id][0].probability >= 1.0))
        ]
        bands.append(Band(low=low, high=high, count=len(hits), correct=sum(hits)))
    return bands


def cross_validation(logs: list[LabelledLog], calibration: Calibration) -> dict[str, Any]:
    """The three cross-validated figures of the module docstring, and the model's bands."""
    library = load_library()
    scores = cross_validated_scores(logs)
    failures = [log for log in logs if log.trains]
    alone = _figures(
        [(log.truth, scores[log.id][0].diagnosis_class if scores[log.id] else "unknown") for log in failures]
    )
    alone["top_two"] = sum(log.truth in [score.diagnosis_class for score in scores[log.id][:2]] for log in failures)
    decisions = {log.id: final_decision(log, scores[log.id], calibration, library, first=False) for log in logs}
    combined = _figures([(log.truth, decisions[log.id].diagnosis_class) for log in logs])
    combined["healthy_flagged"] = sum(
        not log.failure and decisions[log.id].diagnosis_class not in NO_FAILURE_CLASSES for log in logs
    )
    by_model = [log for log in logs if decisions[log.id].decided_by == "model"]
    combined["decided_by_model"] = _figures([(log.truth, decisions[log.id].diagnosis_class) for log in by_model])
    first: dict[str, Any] = {}
    for blind_set in sorted({log.blind_set for log in logs if log.blind_set}):
        members = [log for log in logs if log.blind_set == blind_set]
        simulated = [
            (log.truth, final_decision(log, scores[log.id], calibration, library, first=True)) for log in members
        ]
        figures = _figures([(truth, decision.diagnosis_class) for truth, decision in simulated])
        figures["rules_alone_correct"] = sum(log.truth == log.first_class for log in members)
        figures["healthy_flagged"] = sum(
            truth in NO_FAILURE_CLASSES and decision.diagnosis_class not in NO_FAILURE_CLASSES
            for truth, decision in simulated
        )
        first[blind_set] = figures
    return {
        "threads": len({log.source for log in logs}),
        "model_alone": alone,
        "combined": combined,
        "first_measurements": first,
        "model_bands": [band.model_dump() for band in model_bands(logs, scores)],
    }


def written_files(logs: list[LabelledLog]) -> dict[Path, str]:
    """The model file and the calibration file with the model's bands, as ``--write`` writes them."""
    current = load_calibration()
    bands = model_bands(logs, cross_validated_scores(logs))
    counted = sum(band.count for band in bands)
    source = f"leave-one-thread-out predictions on the {TRAINING_SPLIT} split ({counted} failure logs)"
    calibration = render_table(current.bands, current.threshold, current.source, bands, source)
    return {MODEL_PATH: render(train_on(logs)), CALIBRATION_PATH: calibration}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="Write the model and its calibration bands")
    action.add_argument("--check", action="store_true", help="Exit 1 when the committed model or bands are stale")
    options = parser.parse_args(argv)
    started = time.perf_counter()
    logs = labelled_logs()
    if options.check:
        files = written_files(logs)
        stale = [path for path, text in files.items() if not path.is_file() or path.read_text("utf-8") != text]
        if stale:
            names = ", ".join(str(path.relative_to(REPO_ROOT)) for path in stale)
            note(f"stale: {names}; run python -m benchmarks.diagnosis_model --write")
            sys.exit(1)
        note("the committed model and its bands are what the corpus trains")
        return
    if options.write:
        for path, text in written_files(logs).items():
            path.write_text(text, encoding="utf-8")
            note(f"wrote {path.relative_to(REPO_ROOT)}")
        load_calibration.cache_clear()
    figures = cross_validation(logs, load_calibration())
    note(
        f"leave-one-thread-out on {len(logs)} logs ({figures['threads']} threads): model alone "
        f"{figures['model_alone']['correct']}/{figures['model_alone']['count']}, combined "
        f"{figures['combined']['correct']}/{figures['combined']['count']}"
    )
    for name, part in figures["first_measurements"].items():
        note(
            f"{name} at its first measurement: rules alone {part['rules_alone_correct']}/{part['count']}, "
            f"with the model {part['correct']}/{part['count']}"
        )
    emit(
        {
            "benchmark": "diagnosis_model",
            "split": TRAINING_SPLIT,
            "cross_validation": figures,
            "wall_seconds": round(time.perf_counter() - started, 2),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
