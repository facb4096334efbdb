"""A small learned classifier over the features of a failure: naive Bayes in plain Python.

The model is data (``learned_model.json``, package data) written by ``benchmarks/diagnosis_model.py``
from the labelled diagnosis corpus; a test checks that the file is what the script writes from the
corpus as it is. The file holds counts only: for each feature, in how many training logs of each
class it was seen (each log counts a feature once).

Scoring is multinomial naive Bayes over weighted features. A feature's weight is the weight of its
kind (its prefix, see :mod:`tools.logs.features`) times its inverse document frequency, so that words
every failure log has ("error", "runtime") count for little and rare, telling ones for much. The
score of a class is its log prior plus, for each feature of the log that the model knows, the
weight times the log of the feature's smoothed share of the class's weighted feature mass.
:meth:`LearnedModel.posterior` turns scores into probabilities with a temperature that grows with
the square root of the number of features: naive Bayes treats correlated words as independent
evidence and would otherwise be certain of everything. The probabilities are then calibrated on
how often the model was right, with each log's thread left out of its training
(:mod:`tools.logs.calibration`).
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, Field

from tools.logs.library import DiagnosisClass

MODEL_FILE = "learned_model.json"
DEFAULT_ALPHA = 0.5
# Weight of each kind of feature (its prefix); kinds not listed weigh 1. Word families generalise best,
# nearby lines and word pairs are noisier than the root cause's own words.
DEFAULT_WEIGHTS: dict[str, float] = {"b": 0.5, "f": 0.5, "m": 2.0, "n": 0.3, "q": 0.5}
TEMPERATURE_PER_FEATURE = 10.0  # temperature = sqrt(this * known features)
SUPPORT_FEATURES = 3


@dataclass(frozen=True)
class Example:
    """One labelled log: its features, its class and the thread it came from."""

    features: list[str]
    diagnosis_class: DiagnosisClass
    source: str


@dataclass(frozen=True)
class ClassScore:
    diagnosis_class: DiagnosisClass
    probability: float
    support: list[str]  # the known features that favour this class most


class LearnedModel(BaseModel):
    """Counts of a trained model. ``features`` maps a feature to the number of training logs of each class
    that have it; ``class_counts`` is the number of training logs per class."""

    alpha: float = DEFAULT_ALPHA
    weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    temperature_per_feature: float = TEMPERATURE_PER_FEATURE
    trained_on: str = ""
    class_counts: dict[DiagnosisClass, int] = Field(default_factory=dict)
    features: dict[str, dict[DiagnosisClass, int]] = Field(default_factory=dict)

    @functools.cached_property
    def _documents(self) -> int:
        return sum(self.class_counts.values())

    @functools.cached_property
    def _feature_weights(self) -> dict[str, float]:
        documents = self._documents
        return {
            feature: self.weights.get(feature.split(":", 1)[0], 1.0)
            * math.log((documents + 1) / (sum(counts.values()) + 0.5))
            for feature, counts in self.features.items()
        }

    def weight(self, feature: str) -> float:
        """Kind weight times inverse document frequency (zero for a feature the model does not know)."""
        return self._feature_weights.get(feature, 0.0)

    @functools.cached_property
    def _mass(self) -> dict[DiagnosisClass, float]:
        """Weighted feature mass per class."""
        mass: dict[DiagnosisClass, float] = dict.fromkeys(self.class_counts, 0.0)
        for feature, counts in self.features.items():
            weight = self.weight(feature)
            for diagnosis_class, count in counts.items():
                mass[diagnosis_class] += weight * count
        return mass

    def _log_share(self, feature: str, diagnosis_class: DiagnosisClass) -> float:
        mass = self.weight(feature) * self.features[feature].get(diagnosis_class, 0)
        return math.log((mass + self.alpha) / (self._mass[diagnosis_class] + self.alpha * len(self.features)))

    def posterior(self, features: Iterable[str], top: int = 3) -> list[ClassScore]:
        """The likeliest classes, best first, with probabilities and the features behind each."""
        if not self.class_counts:
            return []
        known = [feature for feature in dict.fromkeys(features) if self.weight(feature) > 0]
        scores: dict[DiagnosisClass, float] = {}
        for diagnosis_class, count in self.class_counts.items():
            score = math.log((count + 1) / (self._documents + len(self.class_counts)))
            for feature in known:
                score += self.weight(feature) * self._log_share(feature, diagnosis_class)
            scores[diagnosis_class] = score
        temperature = max(1.0, math.sqrt(self.temperature_per_feature * len(known)))
        best = max(scores.values())
        exponentials = {name: math.exp((score - best) / temperature) for name, score in scores.items()}
        norm = sum(exponentials.values())
        ranked = sorted(exponentials.items(), key=lambda item: (-item[1], item[0]))[:top]
        return [ClassScore(name, round(value / norm, 4), self._support(known, name)) for name, value in ranked]

    def _support(self, known: list[str], diagnosis_class: DiagnosisClass) -> list[str]:
        """Features that favour this class most over the average of the others (weighted log ratio)."""
        others = [name for name in self.class_counts if name != diagnosis_class]
        lifts = []
        for feature in known:
            own = self._log_share(feature, diagnosis_class)
            rest = sum(math.exp(self._log_share(feature, name)) for name in others) / max(len(others), 1)
            lift = self.weight(feature) * (own - math.log(rest)) if others else 0.0
            if lift > 0:
                lifts.append((lift, feature))
        return [feature for _, feature in sorted(lifts, key=lambda item: (-item[0], item[1]))[:SUPPORT_FEATURES]]

    def without(self, examples: list[Example]) -> LearnedModel:
        """The model :func:`train` gives on this model's training examples less ``examples`` (which must be
        among them), counted by subtraction: the same counts in the same order, so the same scores to the
        bit, at a fraction of a recount's cost (cross-validation trains one model per left-out thread)."""
        class_counts = Counter(self.class_counts)
        changed: dict[str, Counter[DiagnosisClass]] = {}
        for example in examples:
            class_counts[example.diagnosis_class] -= 1
            for feature in set(example.features):
                changed.setdefault(feature, Counter(self.features[feature]))[example.diagnosis_class] -= 1
        features = dict(self.features)
        for feature, counts in changed.items():
            kept = {name: count for name, count in counts.items() if count > 0}
            if kept:
                features[feature] = kept
            else:
                del features[feature]
        return LearnedModel.model_construct(
            alpha=self.alpha,
            weights=dict(self.weights),
            temperature_per_feature=self.temperature_per_feature,
            trained_on=self.trained_on,
            class_counts={name: count for name, count in class_counts.items() if count > 0},
            features=features,
        )


def train(examples: list[Example], *, weights: dict[str, float] | None = None, trained_on: str = "") -> LearnedModel:
    """Count, per class, the training logs that have each feature."""
    features: dict[str, Counter[DiagnosisClass]] = {}
    class_counts: Counter[DiagnosisClass] = Counter()
    for example in examples:
        class_counts[example.diagnosis_class] += 1
        for feature in set(example.features):
            features.setdefault(feature, Counter())[example.diagnosis_class] += 1
    return LearnedModel(
        weights=dict(DEFAULT_WEIGHTS if weights is None else weights),
        trained_on=trained_on,
        class_counts=dict(sorted(class_counts.items())),
        features={feature: dict(sorted(features[feature].items())) for feature in sorted(features)},
    )


def render(model: LearnedModel) -> str:
    """The model file's text: sorted, one feature a line, so that retraining on the same corpus gives the
    same bytes and a change of corpus gives a readable difference."""
    head = model.model_dump(exclude={"features"})
    lines = ["{", *(f"  {json.dumps(key)}: {json.dumps(value, sort_keys=True)}," for key, value in head.items())]
    lines.append('  "features": {')
    items = list(model.features.items())
    for number, (feature, counts) in enumerate(items):
        comma = "," if number < len(items) - 1 else ""
        lines.append(f"    {json.dumps(feature)}: {json.dumps(counts, sort_keys=True, separators=(',', ':'))}{comma}")
    lines += ["  }", "}", ""]
    return "\n".join(lines)


@functools.cache
def load_model() -> LearnedModel:
    """The committed model (an empty one, which predicts nothing, when the file is missing)."""
    path = resources.files("tools.logs").joinpath(MODEL_FILE)
    if not path.is_file():
        return LearnedModel()
    return LearnedModel.model_validate_json(path.read_text(encoding="utf-8"))
