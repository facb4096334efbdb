"""The signature library: typed records loaded from ``signatures.toml`` (package data).

The TOML file is the one place where log wording lives: failure signatures, harmless lines, ready
lines, loading-progress lines and the remedies they point to. :func:`load_library` validates it once
(patterns compile, remedy references resolve) and caches the result.
"""

from __future__ import annotations

import functools
import re
import tomllib
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DiagnosisClass = Literal[
    "healthy",
    "loading",
    "nccl_hang",
    "nccl_error",
    "cuda_oom",
    "unsupported_arch",
    "cuda_graph_capture_failure",
    "port_in_use",
    "model_load_error",
    "spec_decode_problem",
    "process_killed",
    "gpu_hardware_fault",
    "warmup_failed",
    "config_error",
    "attention_backend_error",
    "stopped",
    "unknown",
]
# "stopped": the engine shut down in order (a stop request) after it was ready, with no failure before.
NO_FAILURE_CLASSES: frozenset[str] = frozenset({"healthy", "loading", "stopped"})
MilestoneStage = Literal[
    "launch",
    "distributed_init",
    "weights",
    "weights_done",
    "drafter",
    "memory_profiling",
    "compile",
    "cuda_graph",
    "cuda_graph_done",
    "server",
    "ready",
    "serving",
]
EngineName = Literal["sglang", "vllm"]
FlagValue = str | int | float | bool


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RemedyAction(_Record):
    """What the runbook can apply. Flag keys are EngineLaunchConfig field names (dotted when nested)."""

    set_flag: dict[str, FlagValue] = Field(default_factory=dict)
    adjust_flag: dict[str, float] = Field(default_factory=dict)
    scale_flag: dict[str, float] = Field(default_factory=dict)
    unset_flag: list[str] = Field(default_factory=list)
    set_env: dict[str, str] = Field(default_factory=dict)
    scale_env: dict[str, float] = Field(default_factory=dict)  # an integer variable multiplied, at least 1
    add_flags: list[str] = Field(default_factory=list)  # engine flags with no launch-config field, verbatim
    pick_free_port: bool = False
    needs_human: bool = False

    def compact(self) -> dict[str, Any]:
        """Only the parts that do something, e.g. ``{"set_env": {"NCCL_P2P_DISABLE": "1"}}``."""
        return {key: value for key, value in self.model_dump().items() if value}


class RemedyTemplate(_Record):
    text: str
    action: RemedyAction = Field(default_factory=RemedyAction)


class Signature(_Record):
    id: str
    diagnosis_class: DiagnosisClass = Field(alias="class")
    engines: list[Literal["any", "sglang", "vllm"]]
    patterns: list[str] = Field(min_length=1)
    priority: int
    confidence: float = Field(ge=0.0, le=1.0)
    only_if_last: bool = False
    not_on_info_lines: bool = False  # wording engines also use in INFO/WARNING lines about a harmless case
    # A notice of a wait that a just-in-time kernel build also explains: it says nothing when it appears right after
    # a compiler ran, once, or repeated with nothing else for no longer than a first build takes.
    yields_to_kernel_build: bool = False
    prefer_exception_line: bool = False
    # A failure of one request that only a serving engine reports, in a line of its own with no exception after it:
    # an error even in an excerpt that starts after the engine's ready line, before it answered any request.
    while_serving: bool = False
    remedies: list[str]
    summary: str

    @field_validator("patterns")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            re.compile(pattern)
        return patterns

    def applies_to(self, engine: str | None) -> bool:
        return "any" in self.engines or engine is None or engine in self.engines

    @functools.cached_property
    def regexes(self) -> list[re.Pattern[str]]:
        """The patterns compiled, each one matching what its pattern matches; see :func:`literal_led`."""
        return [re.compile(variant, re.MULTILINE) for pattern in self.patterns for variant in literal_led(pattern)]


_LEADING_CASE_PAIR = re.compile(r"\[([A-Z])([a-z])\](?![*+?{])")


def literal_led(pattern: str) -> list[str]:
    """``[Nn]ot enough`` as ``Not enough`` and ``not enough``: together they match exactly what the pattern
    matches, and each starts with a literal, which the regex engine finds by fast search instead of trying the
    character set at every position (ten times slower over the megabytes of a log's window)."""
    pair = _LEADING_CASE_PAIR.match(pattern)
    if pair is None or pair.group(1).lower() != pair.group(2):
        return [pattern]
    rest = pattern[pair.end() :]
    return [re.escape(pair.group(1)) + rest, re.escape(pair.group(2)) + rest]


class Benign(_Record):
    pattern: str

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class ReadyLine(_Record):
    engine: EngineName
    pattern: str

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class ShutdownLine(_Record):
    """A line an engine's server prints when it shuts down in order (a stop request, not a failure)."""

    pattern: str

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class ProgressLine(_Record):
    stage: str
    pattern: str
    message: str

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    def describe(self, match: re.Match[str]) -> str:
        return self.message.format(**{key: value or "?" for key, value in match.groupdict().items()})


class Milestone(_Record):
    stage: MilestoneStage
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compile(cls, pattern: str) -> str:
        re.compile(pattern)
        return pattern


class SignatureLibrary(_Record):
    remedies: dict[str, RemedyTemplate]
    class_remedies: dict[DiagnosisClass, list[str]]  # for classes decided by structure, not a signature
    benign: list[Benign]
    ready: list[ReadyLine]
    shutdown: list[ShutdownLine] = Field(default_factory=list)
    progress: list[ProgressLine]
    milestones: list[Milestone]
    signatures: list[Signature]

    @model_validator(mode="after")
    def _references_resolve(self) -> SignatureLibrary:
        for signature in self.signatures:
            missing = [remedy for remedy in signature.remedies if remedy not in self.remedies]
            if missing:
                raise ValueError(f"signature {signature.id} names unknown remedies {missing}")
        for diagnosis_class, remedies in self.class_remedies.items():
            missing = [remedy for remedy in remedies if remedy not in self.remedies]
            if missing:
                raise ValueError(f"class_remedies.{diagnosis_class} names unknown remedies {missing}")
        identifiers = [signature.id for signature in self.signatures]
        if len(identifiers) != len(set(identifiers)):
            raise ValueError("signature ids must be unique")
        return self

    def is_benign(self, line: str) -> bool:
        return any(benign.regex.search(line) for benign in self.benign)


def parse_library(text: str) -> SignatureLibrary:
    """Validate a library from TOML text (used for the packaged file and for tests of extensions)."""
    return SignatureLibrary.model_validate(tomllib.loads(text))


@functools.cache
def load_library() -> SignatureLibrary:
    text = resources.files("tools.logs").joinpath("signatures.toml").read_text(encoding="utf-8")
    return parse_library(text)
