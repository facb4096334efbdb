"""The project state document: the single source of truth for a run.

Everything the agent knows lives here, so that a newcomer (or a fresh model context) can pick up the
work from this document alone. The top-level field names are a contract read by other tools; add
fields freely, but never rename or remove one without bumping ``SCHEMA_VERSION`` and migrating.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

RunStatus = Literal["running", "blocked", "done", "failed"]
TaskStatus = Literal["pending", "in_progress", "done", "failed", "skipped"]
ProcessState = Literal["starting", "loading", "ready", "running", "hung", "exited", "stopped", "unknown"]
Interconnect = Literal["nvlink", "pcie", "none", "unknown"]


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds precision, as stored throughout the document."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class Document(BaseModel):
    """Base for every part of the state: unknown keys are kept so newer writers do not lose data."""

    model_config = ConfigDict(extra="allow", validate_assignment=False)


class GpuInfo(Document):
    index: int
    name: str
    compute_capability: str = ""
    memory_total_mib: int = 0
    memory_used_mib: int = 0
    utilization_percent: int | None = None
    temperature_c: int | None = None
    ecc_errors_uncorrected: int | None = None
    xid_errors: list[str] = Field(default_factory=list)


class GpuLink(Document):
    """How two GPUs talk to each other (one entry per unordered pair)."""

    gpu_a: int
    gpu_b: int
    link: str = "unknown"  # nvidia-smi topo vocabulary: NV#, PIX, PXB, PHB, NODE, SYS
    p2p_supported: bool | None = None


class Environment(Document):
    """Hardware and software found by probing the host."""

    probed_at: str | None = None
    host: str = "local"
    simulated_scenario: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    topology: list[GpuLink] = Field(default_factory=list)
    interconnect: Interconnect = "unknown"
    driver_version: str | None = None
    cuda_version: str | None = None
    gpu_probe_error: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = None
    ram_gib: float | None = None
    disk_free_gib: float | None = None
    engine_python: str | None = None
    packages: dict[str, str | None] = Field(default_factory=dict)
    # Model directories found on the host's disk (targets and drafters), e.g. under OPSLOOP_MODEL_DIRS.
    models: list[ModelInfo] = Field(default_factory=list)
    specforge_dir: str | None = None  # a SpecForge source checkout on the host (SPECFORGE_DIR), for scripts/
    specforge_draft_configs: list[str] = Field(default_factory=list)  # <checkout>/configs/*.json
    specforge_datasets: list[str] = Field(default_factory=list)  # <checkout>/cache/dataset/*.jsonl


class ModelInfo(Document):
    name: str | None = None
    path: str | None = None
    size_gib: float | None = None
    architecture: str | None = None
    num_layers: int | None = None
    num_experts: int | None = None
    attention: str | None = None
    quantization: str | None = None
    role: str | None = None  # "target" or "drafter" (an EAGLE draft model), when found by a probe


class Task(Document):
    id: str
    title: str
    status: TaskStatus = "pending"
    notes: str = ""


class Finding(Document):
    step: int
    summary: str
    evidence: list[str] = Field(default_factory=list)
    at: str = Field(default_factory=utc_now)


class ProcessRecord(Document):
    """A process the agent started. (pid, create_time) identifies it: a reused PID never matches."""

    name: str
    pid: int
    create_time: float
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)  # only the variables the agent set, redacted
    log_path: str
    port: int | None = None
    started_at: str = Field(default_factory=utc_now)
    state: ProcessState = "starting"
    exit_code: int | None = None
    kind: str = "process"  # "engine", "drafter_training", "shell", ...
    config: dict[str, Any] = Field(default_factory=dict)  # e.g. the engine launch config
    host_argv: list[str] = Field(default_factory=list)  # the command the host really ran, when translated


class BenchmarkRecord(Document):
    id: str
    label: str
    engine_config: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    at: str = Field(default_factory=utc_now)


class PatchRecord(Document):
    id: str
    path: str
    backup_path: str
    diff: str
    applied_at: str = Field(default_factory=utc_now)
    reverted: bool = False


class Question(Document):
    id: str
    asked_at: str = Field(default_factory=utc_now)
    question: str
    context: str = ""
    evidence: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)
    hypothesis: str = ""
    kind: str = "blocked"  # "blocked", "limit", "approval", "hardware", "unknown_failure", ...
    answer: str | None = None
    answered_at: str | None = None
    seen_by_policy: bool = False  # set once the answer has been shown to the policy


class Usage(Document):
    steps: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float = 0.0
    wall_seconds: float = 0.0


class Limits(Document):
    max_steps: int = 200
    max_wall_seconds: float = 6 * 3600.0
    max_cost_usd: float = 50.0


class Notification(Document):
    channel: str
    event: str
    at: str = Field(default_factory=utc_now)
    delivered: bool
    error: str | None = None
    attempts: int = 1


class RunSettings(Document):
    """How the run was started, so that ``agent resume`` rebuilds the same policy and host without
    repeating flags. Holds only what came from the command line (the config file and the environment
    are read again on resume), never secrets."""

    policy: str | None = None  # the policy chosen when the run started (runbook, scripted, llm)
    simulated_scenario: str | None = None  # ``--sim``: the run uses the simulated host
    config_file: str | None = None
    config_overrides: dict[str, Any] = Field(default_factory=dict)  # command-line layer of the config
    notify: list[str] = Field(default_factory=list)  # --notify specs, added to the configured channels


class PendingStep(Document):
    """A decision being carried out. It is saved before the first tool call, so a crash mid-step
    resumes where it stopped: finished calls keep their results, the call in flight is reported as
    interrupted, and nothing runs twice. Values are JSON dumps of ``agent.actions`` models."""

    step: int
    thought: str = ""
    actions: list[dict[str, Any]] = Field(default_factory=list)
    results: dict[str, dict[str, Any]] = Field(default_factory=dict)  # call id -> Observation


class LoopState(Document):
    """The loop's own bookkeeping: the step in progress, the observations the policy has not seen
    yet, and a small space where a policy keeps what it must remember across a resume."""

    pending: PendingStep | None = None
    observations: list[dict[str, Any]] = Field(default_factory=list)
    policy_state: dict[str, Any] = Field(default_factory=dict)


class ProjectState(Document):
    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    goal: str
    status: RunStatus = "running"
    step: int = 0
    created_at: str = Field(default_factory=utc_now)
    updated_at: str = Field(default_factory=utc_now)
    policy: str | None = None
    environment: Environment = Field(default_factory=Environment)
    model: ModelInfo = Field(default_factory=ModelInfo)
    tasks: list[Task] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    processes: list[ProcessRecord] = Field(default_factory=list)
    benchmarks: list[BenchmarkRecord] = Field(default_factory=list)
    patches: list[PatchRecord] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    limits: Limits = Field(default_factory=Limits)
    notifications: list[Notification] = Field(default_factory=list)
    summary: str | None = None  # the closing report, set when the run finishes
    run: RunSettings = Field(default_factory=RunSettings)
    loop: LoopState = Field(default_factory=LoopState)

    # -- small helpers used by tools and policies; they keep the document consistent ---------------

    def add_finding(self, summary: str, evidence: list[str] | None = None) -> Finding:
        finding = Finding(step=self.step, summary=summary, evidence=list(evidence or []))
        self.findings.append(finding)
        return finding

    def upsert_task(self, task_id: str, title: str | None = None, status: TaskStatus | None = None,
                    notes: str | None = None) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                if title is not None:
                    task.title = title
                if status is not None:
                    task.status = status
                if notes is not None:
                    task.notes = notes
                return task
        task = Task(id=task_id, title=title or task_id, status=status or "pending", notes=notes or "")
        self.tasks.append(task)
        return task

    def pending_questions(self) -> list[Question]:
        return [question for question in self.questions if question.answer is None]

    def process_named(self, name: str) -> ProcessRecord | None:
        """The most recent process record with this name, if any."""
        for record in reversed(self.processes):
            if record.name == name:
                return record
        return None

    def next_id(self, prefix: str, existing: list[str]) -> str:
        return f"{prefix}{len(existing) + 1}"
