"""Hold out a share of prepared hidden-state files for SpecForge's evaluation (``data.eval_hidden_states_path``).

Usage: ``python split_eval.py FEATURES_DIR EVAL_DIR FRACTION``. Standard library only, run by file path.
SpecForge's offline reader lists every ``.ckpt``/``.ckpt.gz`` file under a directory, so moving files from
the training directory to the evaluation directory (keeping their relative paths) splits the set without
copying a byte. Files are taken evenly across the sorted list; at least one is held out, and one is left.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUFFIXES = (".ckpt", ".ckpt.gz")


def feature_files(directory: Path) -> list[Path]:
    found = [Path(root) / name for root, _, names in os.walk(directory) for name in names if name.endswith(SUFFIXES)]
    return sorted(found, key=str)


def split(features: Path, evaluation: Path, fraction: float) -> int:
    files = feature_files(features)
    if len(files) < 2:
        print(f"split_eval: {len(files)} feature files under {features}: need at least 2 to hold one out")
        return 1
    count = min(len(files) - 1, max(1, round(fraction * len(files))))
    step = len(files) / count
    chosen = [files[int(index * step + step / 2)] for index in range(count)]
    for path in chosen:
        target = evaluation / path.relative_to(features)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    print(f"split_eval: held out {count} of {len(files)} feature files in {evaluation}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: split_eval.py FEATURES_DIR EVAL_DIR FRACTION", file=sys.stderr)
        return 2
    return split(Path(argv[1]), Path(argv[2]), float(argv[3]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
