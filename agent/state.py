"""The project state document: the single source of truth for a run.

Everything the agent knows lives here, so that a newcomer (or a fresh model context) can pick up the
work from this document alone. The top-level field names are a contract read by other tools; add
fields freely, but never rename or remove one without bumping ``SCHEMA_VERSION`` and migrating.

The records tools leave here (processes, environment, tasks, patches, benchmarks) are the tools' own
types (:mod:`tools.records`); this module composes them with the agent's own parts (findings,
questions, usage, limits, the loop's bookkeeping). The document implements :class:`tools.base.ToolState`.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import ConfigDict, Field

from agent.actions import Action, ModelUsage, Observation, ToolCall
from agent.limits import Limits
from tools.document import Document, utc_now
from tools.records import (
    BenchmarkRecord,
    Environment,
    ModelInfo,
    PatchRecord,
    ProcessRecord,
    Task,
    TaskStatus,
)

SCHEMA_VERSION = 2

RunStatus = Literal["running", "blocked", "done", "failed"]


class Finding(Document):
    step: int
    summary: str
    evidence: list[str] = Field(default_factory=list)
    at: str = Field(default_factory=utc_now)
    number: int = 0  # 1 for the run's first finding; older ones than the document holds are in the journal
    pinned: bool = False  # kept in the hand-over for the whole run (a root cause, a decision, a constraint)


class History(Document):
    """What the document no longer holds. It is a hand-over of fixed size (see :mod:`agent.history`):
    older findings and records are in the journal, as records of kind ``history``."""

    journal: str = "journal.jsonl"  # beside latest.json
    findings_recorded: int = 0  # findings ever recorded in this run (the last one's number)
    moved: dict[str, int] = Field(default_factory=dict)  # list name -> entries moved to the journal
    journal_head: str | None = None  # the chain of the newest journal record when the state was saved


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
    approval_word: str | None = None  # questions asking for approval: the one answer that approves
    approved: bool | None = None  # set with the answer of such a question: only an explicit approval is True
    approval_used: bool = False  # a single-use approval (one command run) was spent


class Usage(ModelUsage):
    """What the run has spent so far: the model's usage summed over decisions, steps and wall time."""

    model_config = ConfigDict(extra="allow")

    steps: int = 0
    wall_seconds: float = 0.0


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
    interrupted, and nothing runs twice."""

    step: int
    thought: str = ""
    actions: list[Action] = Field(default_factory=list)
    results: dict[str, Observation] = Field(default_factory=dict)  # call id -> its observation

    def calls(self) -> list[ToolCall]:
        return [action for action in self.actions if isinstance(action, ToolCall)]


class LoopState(Document):
    """The loop's own bookkeeping: the step in progress, the observations the policy has not seen
    yet, and a small space where a policy keeps what it must remember across a resume."""

    pending: PendingStep | None = None
    observations: list[Observation] = Field(default_factory=list)
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
    history: History = Field(default_factory=History)

    # -- small helpers used by tools and policies; they keep the document consistent ---------------

    def add_finding(self, summary: str, evidence: list[str] | None = None, pinned: bool = False) -> Finding:
        self.history.findings_recorded += 1
        finding = Finding(
            step=self.step,
            summary=summary,
            evidence=list(evidence or []),
            pinned=pinned,
            number=self.history.findings_recorded,
        )
        self.findings.append(finding)
        return finding

    def upsert_task(
        self, task_id: str, title: str | None = None, status: TaskStatus | None = None, notes: str | None = None
    ) -> Task:
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

    def next_id(self, prefix: str, existing: list[str]) -> str:
        """``prefix`` and one more than the highest number among the ``existing`` ids with that prefix
        (the list may have lost its oldest entries to the journal, never its newest)."""
        numbers = [
            int(item[len(prefix) :]) for item in existing if item.startswith(prefix) and item[len(prefix) :].isdigit()
        ]
        return f"{prefix}{max(numbers, default=0) + 1}"

    def take_approval(self, evidence_line: str, consume: bool = True) -> str | None:
        """The id of an explicitly approved question with this evidence line, not yet used when ``consume``
        (it is then marked used), or None. Approval is the flag set when the answer was recorded, never
        a reading of the answer's text."""
        for question in self.questions:
            if question.kind != "approval" or question.approved is not True or evidence_line not in question.evidence:
                continue
            if consume and question.approval_used:
                continue
            question.approval_used = question.approval_used or consume
            return question.id
        return None
