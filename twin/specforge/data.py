"""What ``specforge train`` learns from: conversations (online, ``data.train_data_path``) or offline features
(``data.hidden_states_path``, written by the preparation stand-in), and the held-out features it evaluates
on (``data.eval_hidden_states_path``).

The quality a converged drafter reaches depends on how much of the data the target itself wrote: the
scenario's ``target_accept_length`` on data the target regenerated, ``generic_accept_length`` on people's
conversations, blended by that share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin.datasets import read_jsonl, target_alignment
from twin.hidden_states.features import EAGLE3_KEYS, list_feature_files, read_feature
from twin.quality import per_position_from_length
from twin.scenario import Scenario


class DataError(Exception):
    """The training data cannot be used; the message is SpecForge's error line."""


@dataclass
class TrainingData:
    alignment: float  # share of assistant turns the target itself would have written
    records: int

    def acceptance(self, scenario: Scenario) -> float:
        """Per-position acceptance of a drafter trained to convergence on this data."""
        training = scenario.training
        span = training.target_accept_length - training.generic_accept_length
        return per_position_from_length(training.generic_accept_length + span * self.alignment)


def _features(path: Path) -> TrainingData:
    files = list_feature_files(path)
    if not files:
        raise DataError(f"ValueError: no offline feature files found under {str(path)!r}")
    target = total = 0
    for file in files:
        try:
            document = read_feature(file)
        except ValueError as error:
            raise DataError(f"RuntimeError: {error}") from None
        missing = [key for key in EAGLE3_KEYS if key not in (document.get("keys") or [])]
        if missing:
            raise DataError(f"KeyError: '{file} missing required offline feature keys {missing}'")
        target += int(document.get("target_turns") or 0)
        total += int(document.get("assistant_turns") or 0)
    return TrainingData(target / total if total else 0.0, len(files))


def _conversations(path: Path) -> TrainingData:
    try:
        records: list[dict[str, Any]] = read_jsonl(path)
    except (OSError, ValueError) as error:
        raise DataError(f"FileNotFoundError: cannot read training data {path}: {error}") from None
    if not records:
        raise DataError(f"ValueError: the training data {path} holds no records")
    return TrainingData(target_alignment(records), len(records))


def training_data(config: dict[str, Any]) -> TrainingData:
    data = config["data"]
    if data.get("hidden_states_path"):
        return _features(Path(str(data["hidden_states_path"])))
    if not data.get("train_data_path"):
        raise DataError("NotImplementedError: [simulated host] data.prompts_path is not simulated")
    return _conversations(Path(str(data["train_data_path"])))


def evaluation_data(config: dict[str, Any]) -> TrainingData | None:
    path = (config.get("data") or {}).get("eval_hidden_states_path")
    return _features(Path(str(path))) if path else None
