"""Read a drafter run's progress from its log, its status file and the files it writes.

SpecForge prints ``step {N}: {dict}`` with Python dict syntax [SF@a6b6b02 training/assembly.py:291]:
training keys ``acc_0..``, ``ploss_0..``, ``acc``, ``loss``, ``acceptance_rate_i``, ``acceptance_rate``,
``lr``; evaluation keys prefixed ``eval/``, among them ``eval/simulated_acc_len``, which leaves out the
bonus token (add 1 to compare with SGLang's accept length; SpecForge ``specforge/eval/evaluator.py``).
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tools.redact import redact_text

STEP_LINE = re.compile(r"^step (\d+): (\{.*\})\s*$")
NON_FINITE = re.compile(r"(?<![\w'\"])-?(nan|inf)(?![\w'\"])")
TOTAL_STEPS = re.compile(r"total_steps=(\d+)")
STAGE_LINE = re.compile(r"^\[opsloop-drafter\] ")
TAIL_BYTES = 4 * 1024 * 1024


class DrafterProgress(BaseModel):
    state: str = "unknown"
    stage: str | None = None
    stages: dict[str, str] = Field(default_factory=dict)
    error: str | None = None
    step: int | None = None
    total_steps: int | None = None
    loss: float | None = None
    accuracy: float | None = None
    per_position_accuracy: list[float] = Field(default_factory=list)
    acceptance_rate: float | None = None
    learning_rate: float | None = None
    eval_step: int | None = None
    simulated_acc_len: float | None = None
    accept_length_estimate: float | None = Field(
        default=None, description="simulated_acc_len + 1, comparable with SGLang"
    )
    regenerated_records: int | None = None
    prepared_samples: int | None = Field(
        default=None, description="Hidden-state files written so far (offline route): progress of a quiet stage"
    )
    stage_cpu_seconds: float | None = Field(
        default=None,
        description="CPU spent by the running stage: it grows while the stage works, even when it prints nothing",
    )
    log_bytes: int = 0
    recent_lines: list[str] = Field(default_factory=list)


def parse_metrics(text: str) -> dict[str, Any] | None:
    """The dict of a progress line; ``nan``/``inf`` become None. None when it is not a dict literal."""
    try:
        value = ast.literal_eval(NON_FINITE.sub("None", text))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, dict) else None


def _number(metrics: dict[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def apply_line(progress: DrafterProgress, line: str) -> None:
    match = STEP_LINE.match(line.strip())
    if match is None:
        total = TOTAL_STEPS.search(line)
        if total and not STAGE_LINE.match(line):
            progress.total_steps = int(total.group(1))
        return
    metrics = parse_metrics(match.group(2))
    if metrics is None:
        return
    step = int(match.group(1))
    if any(key.startswith("eval/") for key in metrics):
        simulated = _number(metrics, "eval/simulated_acc_len")
        if simulated is not None:
            progress.eval_step, progress.simulated_acc_len = step, simulated
            progress.accept_length_estimate = round(simulated + 1.0, 4)
        return
    progress.step = step
    progress.loss = _number(metrics, "loss") if "loss" in metrics else progress.loss
    progress.accuracy = _number(metrics, "acc") if "acc" in metrics else progress.accuracy
    progress.acceptance_rate = (
        _number(metrics, "acceptance_rate") if "acceptance_rate" in metrics else progress.acceptance_rate
    )
    progress.learning_rate = _number(metrics, "lr") if "lr" in metrics else progress.learning_rate
    positions = sorted(
        (int(key[4:]), value)
        for key, value in metrics.items()
        if re.fullmatch(r"acc_\d+", key) and isinstance(value, int | float)
    )
    if positions:
        progress.per_position_accuracy = [round(float(value), 4) for _, value in positions]


def read_tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(size - TAIL_BYTES, 0))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _feature_files(directories: list[Path]) -> int:
    suffixes = (".ckpt", ".ckpt.gz")
    return sum(
        sum(1 for name in names if name.endswith(suffixes))
        for directory in directories
        for _, _, names in os.walk(directory)
    )


def read_progress(
    log_path: Path, status_path: Path, regenerated_path: Path | None, feature_dirs: list[Path] | None = None
) -> DrafterProgress:
    progress = DrafterProgress()
    try:
        status = json.loads(status_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        status = {}
    progress.state = str(status.get("state", "starting"))
    progress.stage = status.get("stage")
    progress.error = status.get("error")
    stages = status.get("stages") or {}
    progress.stages = {name: str(item.get("state")) for name, item in stages.items()}
    if progress.stage in stages:
        progress.stage_cpu_seconds = stages[progress.stage].get("cpu_seconds")
    progress.log_bytes = log_path.stat().st_size if log_path.exists() else 0
    lines = read_tail(log_path).splitlines()
    for line in lines:
        apply_line(progress, line)
    progress.recent_lines = [redact_text(line)[:300] for line in lines if line.strip()][-8:]
    if regenerated_path is not None and regenerated_path.exists():
        with regenerated_path.open("rb") as handle:
            progress.regenerated_records = sum(1 for line in handle if line.strip())
    if feature_dirs and any(directory.exists() for directory in feature_dirs):
        progress.prepared_samples = _feature_files(feature_dirs)
    return progress
