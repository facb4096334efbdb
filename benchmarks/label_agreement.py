"""How far careful readers agree on the corpus's classes, and where the diagnosis stands among them.

A random sample of the public blind sets' logs was relabelled by two readers each, from the log and its
process facts alone (``tests/data/diagnosis_corpus/relabels.toml``; its header says how the sample was
drawn and what the readers were given). The collector's label was given knowing the thread; a relabel is
what a reader can tell from the log, which is all the diagnosis sees. The figures:

- ``collector_vs_reader``: how often a reader's class is the collector's (each of the two readers counts);
- ``reader_vs_reader``: how often the two readers of a log agree with each other;
- ``kappa``: Cohen's kappa of collector against reader (agreement beyond what the class frequencies give);
- ``diagnosis_first``: the diagnosis at the set's first measurement against the collector's class, on the
  whole sample, on the logs all three labels agree on, and on the rest;
- ``diagnosis_first_any``: how often the first measurement is one of the three labels.

    python -m benchmarks.label_agreement            # the figures (one JSON line)
    python -m benchmarks.label_agreement --list     # also every log where the labels differ
    python -m benchmarks.label_agreement --draw     # the sample's ids as drawn (no labels needed)
"""

from __future__ import annotations

import argparse
import random
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from benchmarks.common import emit
from benchmarks.diagnosis_corpus import CORPUS, blind_set, load_part

RELABELS = CORPUS / "relabels.toml"
SAMPLE_SEED = 31
SAMPLE_SIZE = 100
SAMPLE_SETS = range(5, 30)  # the public blind sets with a first measurement when the sample was drawn


def draw_sample(corpus: Path = CORPUS) -> list[str]:
    """The relabelled sample's ids: ``random.Random(31).sample`` of 100 from the sorted ids of the logs first
    measured in blind sets 5 to 29. Sets added later do not change it."""
    eligible = []
    for entry in load_part(corpus):
        name = blind_set(entry)
        number = re.fullmatch(r"blind set (\d+)", name or "")
        if number and int(number.group(1)) in SAMPLE_SETS:
            eligible.append(entry["id"])
    return random.Random(SAMPLE_SEED).sample(sorted(eligible), SAMPLE_SIZE)


@dataclass(frozen=True)
class LabelledSample:
    id: str
    collector: str
    readers: tuple[str, ...]
    first: str  # the diagnosis at the set's first measurement
    unsure: int  # readers who marked their class as not sure


def load_sample(corpus: Path = CORPUS, relabels: Path = RELABELS) -> list[LabelledSample]:
    """The relabelled logs with their collector's class and first measurement; an id the corpus lacks, or an
    entry without a first measurement, is an error."""
    entries = {entry["id"]: entry for entry in load_part(corpus)}
    with relabels.open("rb") as handle:
        document: dict[str, Any] = tomllib.load(handle)
    sample = []
    for relabel in document["relabels"]:
        entry = entries.get(relabel["id"])
        if entry is None or "first_class" not in entry:
            raise ValueError(f"{relabel['id']}: not a corpus entry with a first measurement")
        labels = relabel["labels"]
        sample.append(
            LabelledSample(
                id=relabel["id"],
                collector=entry["class"],
                readers=tuple(label["class"] for label in labels),
                first=entry["first_class"],
                unsure=sum(not label["sure"] for label in labels),
            )
        )
    return sample


def _rate(hits: int, total: int) -> dict[str, Any]:
    return {"right": hits, "of": total, "percent": round(100 * hits / total, 1) if total else None}


def cohen_kappa(pairs: list[tuple[str, str]]) -> float:
    """Agreement of two labellings beyond chance: (observed - expected) / (1 - expected), where the expected
    agreement comes from each side's class frequencies."""
    total = len(pairs)
    observed = sum(left == right for left, right in pairs) / total
    left_counts = Counter(left for left, _ in pairs)
    right_counts = Counter(right for _, right in pairs)
    expected = sum(left_counts[name] * right_counts[name] for name in left_counts) / total**2
    return round((observed - expected) / (1 - expected), 3) if expected < 1 else 1.0


def figures(sample: list[LabelledSample]) -> dict[str, Any]:
    collector_pairs = [(log.collector, reader) for log in sample for reader in log.readers]
    reader_pairs = [pair for log in sample for pair in combinations(log.readers, 2)]
    unanimous = [log for log in sample if set(log.readers) == {log.collector}]
    disputed = [log for log in sample if set(log.readers) != {log.collector}]
    return {
        "logs": len(sample),
        "collector_vs_reader": _rate(sum(left == right for left, right in collector_pairs), len(collector_pairs)),
        "reader_vs_reader": _rate(sum(left == right for left, right in reader_pairs), len(reader_pairs)),
        "kappa": cohen_kappa(collector_pairs),
        "unanimous_logs": len(unanimous),
        "readers_unsure": sum(log.unsure for log in sample),
        "diagnosis_first": {
            "all": _rate(sum(log.first == log.collector for log in sample), len(sample)),
            "unanimous": _rate(sum(log.first == log.collector for log in unanimous), len(unanimous)),
            "disputed": _rate(sum(log.first == log.collector for log in disputed), len(disputed)),
        },
        "diagnosis_first_any": _rate(sum(log.first in {log.collector, *log.readers} for log in sample), len(sample)),
        "diagnosis_first_vs_reader": _rate(
            sum(log.first == reader for log in sample for reader in log.readers), len(collector_pairs)
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="also list every log whose labels differ")
    parser.add_argument("--draw", action="store_true", help="print the sample's ids as drawn, and nothing else")
    options = parser.parse_args(argv)
    if options.draw:
        emit({"seed": SAMPLE_SEED, "ids": draw_sample()})
        return
    sample = load_sample()
    result = figures(sample)
    if options.list:
        result["differing"] = [
            {"id": log.id, "collector": log.collector, "readers": list(log.readers), "first": log.first}
            for log in sample
            if set(log.readers) != {log.collector}
        ]
    emit(result)


if __name__ == "__main__":
    main()
