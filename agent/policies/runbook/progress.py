"""Where the runbook stands, kept in the state document (``state.loop.policy_state["runbook"]``).

The runbook keeps no hidden state: everything it needs to pick up the work is this record plus the rest
of the document (processes, findings), including the figures of what it measured.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.state import ProjectState

Phase = Literal[
    "probe",
    "nodes",
    "plan",
    "launch",
    "await",  # keep watching a live engine that is still loading (the operator said to keep waiting)
    "recheck",  # a failed launch the log does not explain: probe the hardware again
    "recheck_kernel",  # ... then read the kernel log
    "ask",  # ask the question waiting in ``pending_ask`` (after the GPUs were freed)
    "end",  # the operator said stop: stop what still starts, then end done or failed
    "verify",
    "lossless",
    "bench",
    "advance",
    "stop",
    "train",
    "train_wait",
    "train_sleep",
    "finish",
]
# What the engine being brought up is for.
Purpose = Literal["baseline", "offshelf", "trained", "training_target", "final"]


class Attempt(BaseModel):
    number: int
    purpose: Purpose
    process: str
    change: str
    outcome: str = "pending"
    diagnosis: str | None = None
    key_line: str | None = None
    phase: str | None = None  # how far start-up got (the diagnosis' phase)
    shortfall_gib: float | None = None  # memory the failing allocation lacked ("Tried to allocate ...")


class Step(BaseModel):
    """One change of a remedy ladder: what it changed (with the values before, to revert it) and its verdict."""

    diagnosis: str  # the class it answers
    remedy: str  # remedy id, or "engine:<setting>" for the engine's own advice
    text: str
    action: dict[str, Any]
    before: dict[str, Any] = Field(default_factory=dict)  # dotted field -> value before (None: unset)
    changes: list[str] = Field(default_factory=list)
    attempt: int = 0  # the launch that tried it
    verdict: Literal["pending", "helped", "no_help", "reverted"] = "pending"


class Ending(BaseModel):
    """How the run ends after an operator's stop answer."""

    status: Literal["done", "failed"]
    reason: str


class Measurement(BaseModel):
    """What the runbook compares of one benchmark (the first level's figures)."""

    output_tok_s: float
    accept_length: float | None = None


class TrainingRecord(BaseModel):
    """Where the drafter phase stands (``drafter.py``): check the prerequisites with a dry run, regenerate the
    data with the serving target, free the GPUs when the preparation needs them, then prepare, train and
    export in one job."""

    step: Literal["check", "data", "prepare"] = "check"
    base_name: str | None = None  # drafter-N; the data job is drafter-N-data
    stop_reason: str | None = None  # why the serving engine must be stopped before the preparation
    data_path: str | None = None  # the conversations the target regenerated
    reprobe: bool = False  # a human fixed the setup: probe again before checking
    notes: list[str] = Field(default_factory=list)  # what happened, for the report


class RunbookProgress(BaseModel):
    phase: Phase = "probe"
    awaiting: str | None = None  # the tool the last decision called, whose result comes next
    engine: Literal["sglang", "vllm"] | None = None
    speculative_wanted: bool = False
    target_path: str | None = None
    served_model: str | None = None
    base_config: dict[str, Any] = Field(default_factory=dict)  # the target without speculation
    purpose: Purpose = "baseline"
    current: str | None = None  # name of the engine process this phase works with
    base_url: str | None = None  # where that engine serves
    reached_at: str | None = None  # where this machine reaches it, when the host serves it elsewhere
    bench_stage: Literal["single", "peak"] = "single"
    blocked_on: str | None = None  # the kind of question asked; cleared by the human's answer
    acknowledged: list[str] = Field(default_factory=list)  # question kinds a human said to go past
    attempts_forgiven: int = 0  # attempts before the last answer, not counted against max_attempts
    tried: dict[str, list[str]] = Field(default_factory=dict)  # diagnosis class -> remedy ids tried
    attempts: list[Attempt] = Field(default_factory=list)
    benchmarks: dict[str, str] = Field(default_factory=dict)  # "purpose stage" -> benchmark id
    # "purpose stage" -> its figures, kept here because old benchmark records leave the document.
    measurements: dict[str, Measurement] = Field(default_factory=dict)
    offshelf_drafter: str | None = None
    trained_drafter: str | None = None
    training_job: str | None = None
    training: TrainingRecord = Field(default_factory=TrainingRecord)
    after_stop: Phase = "launch"  # where to go once the engine is stopped
    chosen: Purpose | None = None  # the configuration kept at the end
    changes: list[str] = Field(default_factory=list)  # what was changed and why, for the report
    node_env: dict[str, dict[str, str]] = Field(default_factory=dict)  # multi-node: each host's NCCL settings
    device: Literal["gpu", "cpu"] = "gpu"  # where the engine runs (cpu_plan.py plans a CPU deployment)
    cpu_kv_space_max_gib: int | None = None  # the most KV-cache GiB the NUMA nodes leave room for (CPU)
    lossless_reference: list[str] = Field(default_factory=list)  # the baseline's greedy outputs (lossless gate)
    rejected: dict[str, str] = Field(default_factory=dict)  # purpose -> why its configuration was wrong
    steps: list[Step] = Field(default_factory=list)  # the remedy ladder so far
    ladders: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)  # class -> its options, in order
    engine_settings: dict[str, Any] = Field(default_factory=dict)  # values the engine reported it used
    gpu_count: int | None = None  # GPUs the plan was made for
    failure: dict[str, Any] | None = None  # the diagnosis of the failed launch being looked into
    pending_ask: dict[str, Any] | None = None  # a question to ask once the GPUs are free
    ending: Ending | None = None
    verdicts: dict[str, str] = Field(default_factory=dict)  # purpose -> why it was kept or dropped
    training_pointless: str | None = None  # why training another drafter would not help

    @property
    def agent_url(self) -> str | None:
        """Where the agent reaches the serving engine (checks and benchmarks run from here)."""
        return self.reached_at or self.base_url

    @classmethod
    def load(cls, state: ProjectState) -> RunbookProgress:
        raw = state.loop.policy_state.get("runbook")
        return cls.model_validate(raw) if isinstance(raw, dict) and raw else cls()

    def save(self, state: ProjectState) -> None:
        state.loop.policy_state["runbook"] = self.model_dump(mode="json")

    def launch_name(self) -> str:
        return f"engine-{len(self.attempts) + 1}"
