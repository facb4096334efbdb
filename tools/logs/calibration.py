"""Confidence that means something: raw evidence scores mapped to how often they were right.

The table (``calibration.toml``, package data) has two sets of bands. ``bands``, written by
``benchmarks/diagnosis_corpus.py --write-calibration``: for each band of the rules' raw confidence, how
many of the diagnoses the rules decided fell in it and how many were right (current outcomes, and the
blind sets' first measurements). ``model_bands``, written by ``benchmarks/diagnosis_model.py --write``:
for each band of the learned model's probability, how often its likeliest class was right with the
log's thread left out of its training. The calibrated confidence of a band is its smoothed hit rate
``(right + 1) / (count + 2)``, so a band seen rarely stays near one half. A failure diagnosis whose
calibrated confidence is below ``threshold`` is reported as ``unknown``.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from itertools import pairwise

from pydantic import BaseModel, Field

BAND_EDGES = (0.0, 0.5, 0.7, 0.8, 0.9, 1.0)
MODEL_BAND_EDGES = (0.0, 0.3, 0.5, 0.7, 0.9, 1.0)  # of the learned model's probability
DEFAULT_THRESHOLD = 0.5


class Band(BaseModel):
    low: float = Field(ge=0.0, le=1.0)
    high: float = Field(ge=0.0, le=1.0)
    count: int = Field(ge=0)
    correct: int = Field(ge=0)

    @property
    def calibrated(self) -> float:
        return round((self.correct + 1) / (self.count + 2), 2)

    def holds(self, raw: float) -> bool:
        return self.low <= raw < self.high or (self.high == 1.0 and raw >= 1.0)


class Calibration(BaseModel):
    threshold: float = DEFAULT_THRESHOLD
    source: str = ""
    bands: list[Band] = Field(default_factory=list)
    model_source: str = ""
    model_bands: list[Band] = Field(default_factory=list)  # of the learned model's probability

    def calibrate(self, raw: float) -> float:
        """The calibrated confidence of a raw score; the raw score itself when no band covers it."""
        return _lookup(self.bands, raw)

    def calibrate_model(self, probability: float) -> float:
        """The calibrated confidence of a decision the learned model made with this probability."""
        return _lookup(self.model_bands, probability)


def _lookup(bands: list[Band], raw: float) -> float:
    for band in bands:
        if band.holds(raw) and band.count:
            return band.calibrated
    return round(raw, 2)


def band_of(raw: float) -> tuple[float, float]:
    for low, high in pairwise(BAND_EDGES):
        if low <= raw < high:
            return low, high
    return BAND_EDGES[-2], BAND_EDGES[-1]


def render_table(
    bands: list[Band], threshold: float, source: str, model_bands: list[Band] | None = None, model_source: str = ""
) -> str:
    """``calibration.toml`` text for the given bands of the rules and of the learned model."""
    lines = [
        "# The rules' bands are written by benchmarks/diagnosis_corpus.py --write-calibration, the learned",
        "# model's by benchmarks/diagnosis_model.py --write; do not edit by hand.",
        f"threshold = {threshold}",
        f'source = "{source}"',
        f'model_source = "{model_source}"',
        "",
    ]
    for table, listed in (("bands", bands), ("model_bands", model_bands or [])):
        for band in listed:
            lines += [
                f"[[{table}]]",
                f"low = {band.low}",
                f"high = {band.high}",
                f"count = {band.count}",
                f"correct = {band.correct}",
                "",
            ]
    return "\n".join(lines)


@functools.cache
def load_calibration() -> Calibration:
    path = resources.files("tools.logs").joinpath("calibration.toml")
    if not path.is_file():
        return Calibration()
    return Calibration.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
