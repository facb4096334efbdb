"""The expected outcome of a scenario (version 2): what a good operator does on this host, written before
the agent is run on it. The twin itself ignores it; the scenario tests run the agent through the CLI,
answer each expected question, and compare.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExpectedQuestion(_Strict):
    """A question the agent should ask, and the answer the test gives it."""

    kind: str  # the question kind (hardware, exhausted, unknown_failure, training_setup, ...)
    answer: str
    # Words the question, its hypothesis or its evidence must contain (case-insensitive).
    mentions: list[str] = Field(default_factory=list)
    # Whether an engine the agent started may still be alive while it asks: false means the GPUs are free.
    engine_alive: bool | None = None


class Expectation(_Strict):
    goal: str = "serve the model"
    status: Literal["done", "failed", "blocked"]  # how the run ends after the answers below
    questions: list[ExpectedQuestion] = Field(default_factory=list)
    # Launch settings at the end (launch-config names; dotted for nested ones, e.g. "env.NCCL_P2P_DISABLE").
    config: dict[str, Any] = Field(default_factory=dict)
    # Launch settings that must not be set at the end (a change that did not help was reverted).
    unset: list[str] = Field(default_factory=list)
    chosen: Literal["baseline", "offshelf", "trained"] | None = None  # the configuration kept (done runs)
    max_launches: int | None = Field(default=None, ge=1)
    # Words the closing report (done), the failure reason (failed) or the last question (blocked) contains.
    report: list[str] = Field(default_factory=list)
    # Words no change the run made may contain (e.g. no NCCL setting after a GPU fell off the bus).
    never_changed: list[str] = Field(default_factory=list)
    never_called: list[str] = Field(default_factory=list)  # tools the run must not call (e.g. train_drafter)
    why: str = ""  # the reasoning behind the expectation, for people
