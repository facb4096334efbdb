"""Diagnosis accuracy on the corpus of real engine logs (``tests/data/diagnosis_corpus``).

A corpus part is an index TOML file, or a directory holding ``index.toml``, in either of two formats:

- ``[[logs]]`` entries (id, split, source, engine, class, fix; optional process facts exit_code,
  process_alive, seconds_since_output, stalled) with the logs under ``logs/<id>.log``;
- ``[[cases]]`` entries of captured engine runs (id, expected_class, file, optional exit_code).

Entries without a ``split`` are reported under the part's name (the directory's name, or the index file's stem
when it is not ``index``). The main corpus holds excerpts from public issue threads (a few from committed log
files, forum threads and web pages), split into ``tune`` and ``holdout``; the logs of a real vLLM provoked on
this project's CPU engine environment (``tests/data/real_vllm``, see docs/real-engine.md) are reported on their
own as ``real_vllm``, and the cases provoked for blind sets 17 and 19 (``tests/data/real_vllm_blind``) as
``real_vllm_blind``.
For each part: accuracy overall and per true class, how many logs without a failure (``healthy``,
``loading``, ``stopped``) were called a failure, and how often each confidence band was right.

    python -m benchmarks.diagnosis_corpus                           # every part, misses of the tune split
    python -m benchmarks.diagnosis_corpus --corpus DIR_OR_INDEX     # any part (repeat for several)
    python -m benchmarks.diagnosis_corpus --write-calibration       # recompute the bands from all labelled parts

``--show-misses`` names the parts whose misses are listed (default ``tune``): the holdout part is
meant to be read as a figure, not tuned against. ``stalled = true`` states that the thread reports
the process alive and silent for long (a hang) without saying for how long; it is given to the
diagnosis as silence of the default stale threshold.
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
REAL_VLLM = REPO_ROOT / "tests" / "data" / "real_vllm"  # logs of a real vLLM (CPU build), with their commands
# Further real-vLLM cases provoked by people who had not seen the diagnosis, each measured blind once (sets 17, 19).
REAL_VLLM_BLIND = REPO_ROOT / "tests" / "data" / "real_vllm_blind"
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
    first_class: str | None = None  # the diagnosis at the entry's first, blind measurement
    first_raw_confidence: float | None = None
    blind_set: str | None = None  # "blind set 1", ...: the set of that first measurement
    decided_by: str = "rules"

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
    if case.get("first_class") is not None:  # a case measured blind once (kept as text by the capture tool)
        entry["first_class"] = str(case["first_class"])
        entry["first_raw_confidence"] = float(case.get("first_raw_confidence", 0.0))
    return entry


def index_path(part: Path) -> Path:
    """The index file of a part given as a directory or as the index file itself."""
    return part / "index.toml" if part.is_dir() else part


def part_name(part: Path) -> str:
    index = index_path(part)
    return index.parent.name if index.stem == "index" else index.stem


def load_part(part: Path, default_split: str | None = None) -> list[dict[str, Any]]:
    """The entries of one corpus part: ``[[logs]]`` (logs under ``logs/``) or ``[[cases]]`` (a ``file`` each).

    Raises ``ValueError`` when the index has neither or an entry lacks its id or class."""
    index = index_path(part)
    directory = index.parent
    document = tomllib.loads(index.read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = document.get("logs") or [_from_case(case) for case in document.get("cases", [])]
    if not entries:
        raise ValueError(f"{index}: no [[logs]] or [[cases]] entries")
    for entry in entries:
        if "id" not in entry or "class" not in entry:
            raise ValueError(f"{index}: an entry without id or class: {entry}")
        entry.setdefault("split", default_split or part_name(part))
        entry["path"] = directory / entry["file"] if "file" in entry else directory / "logs" / f"{entry['id']}.log"
    return entries


def entry_hints(entry: dict[str, Any]) -> DiagnosisHints:
    """The process facts an entry states, as diagnosis hints."""
    silence = entry.get("seconds_since_output")
    if silence is None and entry.get("stalled"):
        silence = DiagnosisHints().stale_after_seconds
    return DiagnosisHints(
        exit_code=entry.get("exit_code"),
        process_alive=entry.get("process_alive"),
        seconds_since_output=silence,
    )


def run_entry(entry: dict[str, Any]) -> Outcome:
    diagnosis = diagnose_text(Path(entry["path"]).read_text(encoding="utf-8", errors="replace"), entry_hints(entry))
    return Outcome(
        entry["id"],
        entry["split"],
        entry["class"],
        diagnosis.diagnosis_class,
        diagnosis.raw_confidence,
        diagnosis.confidence,
        diagnosis.key_line,
        entry.get("first_class"),
        entry.get("first_raw_confidence"),
        blind_set(entry),
        diagnosis.decided_by,
    )


def blind_set(entry: dict[str, Any]) -> str | None:
    """The blind set an entry was first measured in (its note starts with the set's name), if any."""
    note_text = str(entry.get("note", ""))
    if entry.get("first_class") is None or not note_text.startswith("blind set"):
        return None
    return note_text.split(",")[0]


def count_bands(observations: list[tuple[float, bool]]) -> list[Band]:
    """How many (confidence, right) observations fell in each band, and how many of them were right."""
    counts: Counter[tuple[float, float]] = Counter()
    right: Counter[tuple[float, float]] = Counter()
    for confidence, was_right in observations:
        band = band_of(confidence)
        counts[band] += 1
        right[band] += was_right
    return [
        Band(low=low, high=high, count=counts[(low, high)], correct=right[(low, high)])
        for low, high in pairwise(BAND_EDGES)
    ]


def bands(outcomes: list[Outcome], *, raw: bool) -> list[Band]:
    return count_bands([(outcome.raw_confidence if raw else outcome.confidence, outcome.right) for outcome in outcomes])


def first_measurements(outcomes: list[Outcome]) -> list[tuple[float, bool]]:
    """(raw confidence, right) of the entries' first, blind measurements, where recorded."""
    return [
        (outcome.first_raw_confidence, outcome.first_class == outcome.truth)
        for outcome in outcomes
        if outcome.first_class is not None and outcome.first_raw_confidence is not None
    ]


def band_table(band_list: list[Band]) -> list[dict[str, Any]]:
    return [
        {
            "low": band.low,
            "high": band.high,
            "count": band.count,
            "correct": band.correct,
            "right_rate": round(band.correct / band.count, 2) if band.count else None,
        }
        for band in band_list
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
        "confidence_bands": band_table(bands(outcomes, raw=False)),  # the confidence reported (calibrated)
        "raw_confidence_bands": band_table(bands(outcomes, raw=True)),  # the evidence's own score
    }
    sets = sorted({outcome.blind_set for outcome in outcomes if outcome.blind_set})
    for name in sets:
        first = first_measurements([outcome for outcome in outcomes if outcome.blind_set == name])
        result.setdefault("first_measurements", {})[name] = {
            "count": len(first),
            "correct": sum(was_right for _, was_right in first),
            "raw_confidence_bands": band_table(count_bands(first)),
        }
    result["decided_by_model"] = {
        "count": sum(outcome.decided_by == "model" for outcome in outcomes),
        "correct": sum(outcome.decided_by == "model" and outcome.right for outcome in outcomes),
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


def _parts(options: argparse.Namespace) -> list[dict[str, Any]]:
    corpora: list[Path] = options.corpus or [CORPUS]
    entries: list[dict[str, Any]] = []
    for corpus in corpora:
        entries += load_part(corpus)
    real_vllm = options.real_vllm or (REAL_VLLM if not options.corpus else None)
    if real_vllm is not None and index_path(real_vllm).is_file():
        entries += load_part(real_vllm, "real_vllm")
    if not options.corpus and not options.real_vllm and index_path(REAL_VLLM_BLIND).is_file():
        entries += load_part(REAL_VLLM_BLIND, "real_vllm_blind")
    return entries


def _write_calibration(outcomes: list[Outcome]) -> None:
    """The rules' bands from every labelled part evaluated (tune, holdout and any other part given),
    counting the current outcome of each log the rules decided and, where recorded, its first blind
    measurement as well. Decisions of the learned model have their own bands
    (``benchmarks/diagnosis_model.py --write``)."""
    names = sorted({outcome.part for outcome in outcomes})
    first = first_measurements(outcomes)
    by_rules = [outcome for outcome in outcomes if outcome.decided_by == "rules"]
    pooled = count_bands([(outcome.raw_confidence, outcome.right) for outcome in by_rules] + first)
    source = (
        f"diagnosis_corpus: parts {', '.join(names)} ({len(by_rules)} logs decided by the rules, current "
        f"outcomes) and {len(first)} first blind measurements, {len(pooled)} bands"
    )
    current = load_calibration()
    text = render_table(pooled, current.threshold, source, current.model_bands, current.model_source)
    CALIBRATION.write_text(text, encoding="utf-8")
    note(f"wrote {CALIBRATION}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--corpus",
        type=Path,
        action="append",
        help="A corpus part: a directory with index.toml or an index file ([[logs]] or [[cases]]); repeat "
        "for several (default: the main corpus and the real_vllm part)",
    )
    parser.add_argument(
        "--real-vllm",
        type=Path,
        default=None,
        help="A directory of captured real-vLLM logs to report as the real_vllm part "
        "(default: tests/data/real_vllm when --corpus is not given)",
    )
    parser.add_argument("--show-misses", default="tune", help="Comma-separated parts whose misses are listed")
    parser.add_argument(
        "--write-calibration",
        action="store_true",
        help=f"Write the confidence bands of every labelled part evaluated to {CALIBRATION.relative_to(REPO_ROOT)}",
    )
    options = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        entries = _parts(options)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as error:
        parser.error(str(error))
    outcomes = [run_entry(entry) for entry in entries]
    shown = {part.strip() for part in options.show_misses.split(",") if part.strip()}
    parts = {
        part: report([outcome for outcome in outcomes if outcome.part == part], part in shown)
        for part in sorted({outcome.part for outcome in outcomes})
    }
    if options.write_calibration:
        _write_calibration(outcomes)
    for part, figures in parts.items():
        note(
            f"{part}: {figures['correct']}/{figures['count']} right ({figures['accuracy']}), "
            f"healthy flagged {figures['healthy_flagged']} of {figures['no_failure_logs']}"
        )
    corpora = [
        str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
        for path in (options.corpus or [CORPUS])
    ]
    emit(
        {
            "benchmark": "diagnosis_corpus",
            "corpus": corpora[0] if len(corpora) == 1 else corpora,
            "threshold": load_calibration().threshold,
            "parts": parts,
            "wall_seconds": round(time.perf_counter() - started, 2),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
