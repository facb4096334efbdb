"""Reading the operator's goal: which engine, whether speculative decoding is wanted, which model.

A model may be named by a word of its directory's name ("serve kimi") or by its path ("serve /models/kimi");
a path is looked up as given (the probe describes it and what lies beside it) and wins over names.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel

from tools.records import ModelInfo

_SPECULATIVE_WORDS = ("eagle", "speculative", "spec decoding", "spec-decoding", "drafter", "mtp")
_NOT_MODEL_WORDS = {
    "serve",
    "with",
    "and",
    "the",
    "using",
    "via",
    "on",
    "for",
    "eagle",
    "eagle3",
    "eagle-3",
    "sglang",
    "vllm",
    "speculative",
    "decoding",
    "drafter",
    "fast",
    "faster",
    "tune",
    "bring",
    "up",
    "deploy",
    "run",
    "benchmark",
    "model",
    "gpus",
    "gpu",
    "a",
    "an",
    "it",
    "to",
}


# An absolute, home-relative or explicitly relative path: /models/x, ~/models/x, ./x, ../x.
_PATH = re.compile(r"(?<!\S)((?:~|\.{1,2})?/[^\s,;]+)")


class GoalSpec(BaseModel):
    engine: Literal["sglang", "vllm"] | None = None  # None: SGLang when installed, else vLLM
    speculative: bool = False
    model_words: list[str] = []
    model_paths: list[str] = []  # paths as written in the goal


def parse_goal(goal: str) -> GoalSpec:
    paths = [match.rstrip("/.") or "/" for match in _PATH.findall(goal)]
    text = _PATH.sub(" ", goal).lower()
    engine: Literal["sglang", "vllm"] | None = None
    if "vllm" in text:
        engine = "vllm"
    elif "sglang" in text:
        engine = "sglang"
    words = [
        word for word in re.findall(r"[a-z0-9][a-z0-9._-]*", text) if word not in _NOT_MODEL_WORDS and len(word) >= 3
    ]
    return GoalSpec(
        engine=engine,
        speculative=any(word in text for word in _SPECULATIVE_WORDS),
        model_words=words,
        model_paths=paths,
    )


def pick_target(goal: GoalSpec, models: list[ModelInfo]) -> ModelInfo | None:
    """The target model the goal names (by path, else by a word), or the only target on the host; None when
    ambiguous or absent."""
    targets = [model for model in models if model.role != "drafter"]
    wanted = {os.path.normpath(os.path.expanduser(path)) for path in goal.model_paths}
    by_path = [model for model in targets if model.path and os.path.normpath(model.path) in wanted]
    if by_path:
        return by_path[0]
    named = [
        model
        for model in targets
        if any(word in (model.name or "").lower() or word in (model.path or "").lower() for word in goal.model_words)
    ]
    if len(named) >= 1:
        return named[0]
    return targets[0] if len(targets) == 1 else None


def pick_drafter(target: ModelInfo, models: list[ModelInfo]) -> ModelInfo | None:
    """An off-the-shelf EAGLE drafter on the host, preferring one whose name shares the target's family."""
    drafters = [model for model in models if model.role == "drafter"]
    family = (target.name or "").lower().split("-")[0]
    for drafter in drafters:
        if family and family in (drafter.name or "").lower():
            return drafter
    return drafters[0] if drafters else None
