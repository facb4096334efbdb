"""Behaviour rules: conditions on the real launch flags and environment, and what they lead to.

A condition on a flag sees the flag's *effective* value (what the engine will use, defaults
resolved); ``present`` asks whether the flag was written on the command line. An environment
variable that is not set has the value ``None``. Outcome rules are tried in order and the one whose
phase comes first wins; every matching modifier applies.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Phase = Literal["args", "init", "load", "kv_cache", "cuda_graph", "warmup", "serving"]
PHASES: tuple[Phase, ...] = ("args", "init", "load", "kv_cache", "cuda_graph", "warmup", "serving")
Scalar = str | int | float | bool


class Condition(BaseModel):
    """Operators on one value; every operator given must hold."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    equals: Scalar | None = None
    in_: list[Scalar] | None = Field(default=None, alias="in")
    not_in: list[Scalar] | None = None
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    present: bool | None = None

    @model_validator(mode="after")
    def _has_an_operator(self) -> Condition:
        if all(value is None for value in self.model_dump().values()):
            raise ValueError("a condition table needs at least one of equals, in, not_in, gt, ge, lt, le, present")
        return self

    def holds(self, value: Any, present: bool) -> bool:
        if self.present is not None and self.present != present:
            return False
        if self.equals is not None and not _same(value, self.equals):
            return False
        if self.in_ is not None and not any(_same(value, item) for item in self.in_):
            return False
        if self.not_in is not None and any(_same(value, item) for item in self.not_in):
            return False
        number = _number(value)
        bounds = ((self.gt, operator.gt), (self.ge, operator.ge), (self.lt, operator.lt), (self.le, operator.le))
        for bound, compare in bounds:
            if bound is not None and (number is None or not compare(number, bound)):
                return False
        return True


ConditionValue = Scalar | list[Scalar] | Condition


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _same(value: Any, expected: Scalar) -> bool:
    if isinstance(expected, bool) or isinstance(value, bool):
        return _truthy(value) == _truthy(expected)
    if isinstance(expected, int | float):
        number = _number(value)
        return number is not None and number == float(expected)
    return value is not None and str(value).lower() == str(expected).lower()


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def condition_holds(expected: ConditionValue, value: Any, present: bool) -> bool:
    if isinstance(expected, Condition):
        return expected.holds(value, present)
    if isinstance(expected, list):
        return any(_same(value, item) for item in expected)
    return _same(value, expected)


@dataclass
class LaunchFacts:
    """What rules can see about one launch."""

    engine: str
    flags: dict[str, Any]  # canonical long flag -> effective value
    explicit: set[str]  # canonical flags written on the command line
    env: Mapping[str, str]
    speculative: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1  # the Nth engine start on this host
    host_seconds: float = 0.0  # the host's clock at this start


class When(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["sglang", "vllm"] | None = None
    speculative: bool | None = None
    flags: dict[str, ConditionValue] = Field(default_factory=dict)
    env: dict[str, ConditionValue] = Field(default_factory=dict)
    # Version 2: the Nth engine start on this host (1, 2, ...) and the host's clock (simulated seconds since
    # the simulated host was set up) when it starts.
    attempt: ConditionValue | None = None
    host_seconds: ConditionValue | None = None

    @model_validator(mode="after")
    def _flags_are_long_options(self) -> When:
        for name in self.flags:
            if not name.startswith("--"):
                raise ValueError(f"flag {name!r} must be written as a long option, e.g. '--attention-backend'")
        return self

    def matches(self, facts: LaunchFacts) -> bool:
        if self.engine is not None and self.engine != facts.engine:
            return False
        if self.speculative is not None and self.speculative != facts.speculative:
            return False
        for name, expected in self.flags.items():
            if not condition_holds(expected, facts.flags.get(name), name in facts.explicit):
                return False
        for name, expected in self.env.items():
            value = facts.env.get(name)
            if not condition_holds(expected, value, value is not None):
                return False
        if self.attempt is not None and not condition_holds(self.attempt, facts.attempt, True):
            return False
        return self.host_seconds is None or condition_holds(self.host_seconds, facts.host_seconds, True)


class Rule(BaseModel):
    """An outcome for launches that match: crash (log lines, exit code), hang, or serve."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    when: When = Field(default_factory=When)
    outcome: Literal["crash", "hang", "serve"]
    at: Phase = "init"
    # Fraction of the phase done before the outcome (e.g. how far a load gets before it dies).
    progress: float = Field(default=0.0, ge=0.0, le=1.0)
    # Lines written to the log; ``{prefix}`` expands to the engine's line prefix, ``{port}`` and
    # ``{attention_backend}``, ``{model_path}``, ``{tp_size}`` to launch values.
    log: list[str] = Field(default_factory=list)
    exit_code: int = Field(default=1, ge=0, le=255)
    ignore_sigterm: bool = False  # a hang that only SIGKILL ends
    # Version 2: the outcome takes effect this long after its point is reached. Before serving the engine
    # is silent meanwhile (a crash after 600 s is a watchdog ending a hang); while serving it serves.
    after_seconds: float = Field(default=0.0, ge=0.0)


class Modifier(BaseModel):
    """Changes to start-up and serving for launches that match; factors multiply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    when: When = Field(default_factory=When)
    single_stream_factor: float = Field(default=1.0, gt=0)
    peak_factor: float = Field(default=1.0, gt=0)
    ttft_factor: float = Field(default=1.0, gt=0)
    load_factor: float = Field(default=1.0, gt=0)
    output: Literal["normal", "garbled"] | None = None
    log: list[str] = Field(default_factory=list)  # printed once at start-up
