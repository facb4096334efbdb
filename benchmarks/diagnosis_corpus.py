"""Diagnosis accuracy on the corpus of real engine logs (``tests/data/diagnosis_corpus``).

Each corpus part is a directory with ``index.toml`` (``[[logs]]`` entries: id, split, source, engine,
class, fix, optional exit_code / process_alive / seconds_since_output) and ``logs/<id>.log``. The main
corpus holds excerpts from public issue threads, split into ``tune`` and ``holdout``; a part in
``real_vllm/`` (logs of a real vLLM, when present) is reported on its own. For each part: accuracy
overall and per true class, how many logs without a failure (``healthy``/``loading``) were called a
failure, and how often each confidence band was right.

    python -m benchmarks.diagnosis_corpus                       # every part, misses of the tune split
    python -m benchmarks.diagnosis_corpus --write-calibration   # recompute the bands from the tune split

``--show-misses`` names the parts whose misses are listed (default ``tune``): the holdout part is
meant to be read as a figure, not tuned against.
"""

from __future__ import annotations

import argparse
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, emit, machine, note
from tools.logs.calibration import BAND_EDGES, Band, band_of, load_calibration, render_table
from tools.logs.diagnose import DiagnosisHints, diagnose_text
from tools.logs.library import NO_FAILURE_CLASSES

CORPUS = REPO_ROOT / "tests" / "data" / "diagnosis_corpus"
CALIBRATION = REPO_ROOT / "tools" / "logs" / "calibration.toml"


@dataclass
class Outcome:
    id: str
    part: str
    truth: str
    got: str
    raw_confidence: float
    confidence: float
    key_line: str | None

    @property
    def right(self) -> bool:
        return self.truth == self.got

    @property
    def healthy_flagged(self) -> bool:
        return self.truth in NO_FAILURE_CLASSES and self.got not in NO_FAILURE_CLASSES


def _from_case(case: dict[str, Any]) -> dict[str, Any]:
    """An entry of a captured-logs index (``[[cases]]`` with ``expected_class`` and ``file``) in corpus form."""
    entry = {"id": case["id"], "class": case["expected_class"], "file": case.get("file", f"{case['id']}.log")}
    if case.get("exit_code") is not None:
        entry["exit_code"] = case["exit_code"]
        entry["process_alive"] = False
    return entry


def load_part(directory: Path, default_split: str) -> list[dict[str, Any]]:
    """The entries of one corpus part: ``[[logs]]`` (logs under ``logs/``) or ``[[cases]]`` (a ``file`` each)."""
    index = tomllib.loads((directory / "index.toml").read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = index.get("logs") or [_from_case(case) for case in index.get("cases", [])]
    for entry in entries:
        entry.setdefault("split", default_split)
        entry["path"] = directory / entry["file"] if "file" in entry else directory / "logs" / f"{entry['id']}.log"
    return entries


def run_entry(entry: dict[str, Any]) -> Outcome:
    hints = DiagnosisHints(
        exit_code=entry.get("exit_code"),
        process_alive=entry.get("process_alive"),
        seconds_since_output=entry.get("seconds_since_output"),
    )
    diagnosis = diagnose_text(Path(entry["path"]).read_text(encoding="utf-8", errors="replace"), hints)
    return Outcome(
        entry["id"],
        entry["split"],
        entry["class"],
        diagnosis.diagnosis_class,
        diagnosis.raw_confidence,
        diagnosis.confidence,
        diagnosis.key_line,
    )


def bands(outcomes: list[Outcome], *, raw: bool) -> list[Band]:
    counts: Counter[tuple[float, float]] = Counter()
    right: Counter[tuple[float, float]] = Counter()
    for outcome in outcomes:
        band = band_of(outcome.raw_confidence if raw else outcome.confidence)
        counts[band] += 1
        right[band] += outcome.right
    return [
        Band(low=low, high=high, count=counts[(low, high)], correct=right[(low, high)])
        for low, high in pairwise(BAND_EDGES)
    ]


def band_table(outcomes: list[Outcome], *, raw: bool) -> list[dict[str, Any]]:
    return [
        {
            "low": band.low,
            "high": band.high,
            "count": band.count,
            "correct": band.correct,
            "right_rate": round(band.correct / band.count, 2) if band.count else None,
        }
        for band in bands(outcomes, raw=raw)
    ]


def report(outcomes: list[Outcome], show_misses: bool) -> dict[str, Any]:
    per_class: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        figures = per_class.setdefault(outcome.truth, {"count": 0, "correct": 0})
        figures["count"] += 1
        figures["correct"] += outcome.right
    correct = sum(outcome.right for outcome in outcomes)
    result: dict[str, Any] = {
        "count": len(outcomes),
        "correct": correct,
        "accuracy": round(correct / len(outcomes), 3) if outcomes else None,
        "per_class": dict(sorted(per_class.items())),
        "no_failure_logs": sum(outcome.truth in NO_FAILURE_CLASSES for outcome in outcomes),
        "healthy_flagged": sum(outcome.healthy_flagged for outcome in outcomes),
        "confidence_bands": band_table(outcomes, raw=False),  # the confidence reported (calibrated)
        "raw_confidence_bands": band_table(outcomes, raw=True),  # the evidence's own score
    }
    if show_misses:
        result["misses"] = [
            {
                "id": outcome.id,
                "class": outcome.truth,
                "got": outcome.got,
                "confidence": outcome.confidence,
                "key_line": (outcome.key_line or "")[:160],
            }
            for outcome in outcomes
            if not outcome.right
        ]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="Corpus directory (index.toml, logs/)")
    parser.add_argument(
        "--real-vllm",
        type=Path,
        default=None,
        help="A directory of captured real-vLLM logs to report as the real_vllm part "
        "(default: CORPUS/real_vllm when it exists)",
    )
    parser.add_argument("--show-misses", default="tune", help="Comma-separated parts whose misses are listed")
    parser.add_argument(
        "--write-calibration",
        action="store_true",
        help=f"Write the confidence bands of the tune split to {CALIBRATION.relative_to(REPO_ROOT)}",
    )
    options = parser.parse_args(argv)
    started = time.perf_counter()
    entries = load_part(options.corpus, "tune")
    real_vllm = options.real_vllm or options.corpus / "real_vllm"
    if (real_vllm / "index.toml").is_file():
        entries += load_part(real_vllm, "real_vllm")
    outcomes = [run_entry(entry) for entry in entries]
    shown = {part.strip() for part in options.show_misses.split(",") if part.strip()}
    parts = {
        part: report([outcome for outcome in outcomes if outcome.part == part], part in shown)
        for part in sorted({outcome.part for outcome in outcomes})
    }
    if options.write_calibration:
        tune_bands = bands([outcome for outcome in outcomes if outcome.part == "tune"], raw=True)
        CALIBRATION.write_text(
            render_table(
                tune_bands, load_calibration().threshold, f"{options.corpus.name}: tune split, {len(tune_bands)} bands"
            ),
            encoding="utf-8",
        )
        note(f"wrote {CALIBRATION}")
    for part, figures in parts.items():
        note(
            f"{part}: {figures['correct']}/{figures['count']} right ({figures['accuracy']}), "
            f"healthy flagged {figures['healthy_flagged']} of {figures['no_failure_logs']}"
        )
    emit(
        {
            "benchmark": "diagnosis_corpus",
            "corpus": str(options.corpus.relative_to(REPO_ROOT))
            if options.corpus.is_relative_to(REPO_ROOT)
            else str(options.corpus),
            "threshold": load_calibration().threshold,
            "parts": parts,
            "wall_seconds": round(time.perf_counter() - started, 2),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
