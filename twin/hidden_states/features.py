"""Offline feature files as the preparation writes them and SpecForge's offline reader lists them.

Layout (``scripts/prepare_hidden_states.py``): ``<output>/rows_<g>-<g+size>/data_<i>.ckpt`` (``.ckpt.gz`` with
``--compress``), one file per sample, groups of ``--file-group-size``. The reader
(``specforge/runtime/data_plane/offline_reader.py``) walks the directory for ``.ckpt``/``.ckpt.gz`` files,
sorted, and an EAGLE-3 file must hold ``input_ids``, ``loss_mask``, ``hidden_state`` and ``aux_hidden_state``.
A simulated file is a JSON document (no tensors) that keeps what the twin needs: the keys it would hold, its
token count and how many assistant turns the target itself would have written.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

SUFFIXES = (".ckpt", ".ckpt.gz")
EAGLE3_KEYS = ("input_ids", "loss_mask", "hidden_state", "aux_hidden_state")


def feature_path(output: Path, index: int, group_size: int, compress: bool) -> Path:
    group = (index // group_size) * group_size
    return output / f"rows_{group}-{group + group_size}" / f"data_{index}{'.ckpt.gz' if compress else '.ckpt'}"


def write_feature(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document).encode("utf-8")
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


def list_feature_files(directory: Path) -> list[Path]:
    """Every feature file under ``directory`` (or the file itself), sorted like SpecForge's reader."""
    if directory.is_file():
        return [directory]
    found = [Path(root) / name for root, _, names in os.walk(directory) for name in names if name.endswith(SUFFIXES)]
    return sorted(found, key=str)


def read_feature(path: Path) -> dict[str, Any]:
    """One simulated feature document; ValueError for anything else."""
    data = path.read_bytes()
    try:
        document = json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{path} is not a simulated offline feature file ({error})") from None
    if not isinstance(document, dict) or not document.get("simulated"):
        raise ValueError(f"{path} is not a simulated offline feature file")
    return document
