"""update_state: the policy writes its plan and what it learned into the state document.

Tasks are upserted by id, findings are appended (with the current step and their evidence), and
``next_steps`` replaces the list when given. The document is what a human (or a fresh model context)
reads to pick up the work, so this is where the reasoning that matters is kept.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput
from tools.records import TaskStatus


class TaskUpdate(ToolArgs):
    id: str = Field(min_length=1, description="Stable task id, e.g. 't1' or 'baseline-bench'.")
    title: str | None = Field(default=None, description="Short title; required when the task is new.")
    status: TaskStatus | None = Field(default=None, description="New status of the task.")
    notes: str | None = Field(default=None, description="Replaces the task's notes.")


class FindingInput(ToolArgs):
    summary: str = Field(min_length=1, description="What was learned or tried, and what happened.")
    evidence: list[str] = Field(
        default_factory=list, description="Verbatim log lines, numbers or file paths backing it."
    )
    pinned: bool = Field(
        default=False,
        description="Keep it in the state document for the whole run (a root "
        "cause, a decision, a constraint); other findings give way to newer ones.",
    )


class UpdateStateArgs(ToolArgs):
    tasks: list[TaskUpdate] = Field(default_factory=list, description="Tasks to add or update.")
    findings: list[FindingInput] = Field(default_factory=list, description="Findings to record.")
    next_steps: list[str] | None = Field(default=None, description="The plan from here; replaces the list.")

    @model_validator(mode="after")
    def _something_to_record(self) -> UpdateStateArgs:
        if not self.tasks and not self.findings and self.next_steps is None:
            raise ValueError("give at least one of tasks, findings or next_steps")
        return self


class UpdateStateOutput(ToolOutput):
    tasks: list[str] = Field(description="Ids of the tasks added or changed.")
    findings_recorded: int
    open_tasks: int
    next_steps: list[str]


class UpdateStateTool(Tool[UpdateStateArgs, UpdateStateOutput]):
    name = "update_state"
    description = (
        "Record your plan and what you learned in the project state document: add or update "
        "tasks (by id), add findings with evidence, and set the next steps. Use it after "
        "every meaningful result, so a human or a fresh session can take over from the "
        "document alone."
    )
    args_model = UpdateStateArgs
    output_model = UpdateStateOutput
    timeout_seconds = 10.0

    def run(self, args: UpdateStateArgs, context: ToolContext) -> UpdateStateOutput:
        state = context.state
        for task in args.tasks:
            state.upsert_task(task.id, title=task.title, status=task.status, notes=task.notes)
        for finding in args.findings:
            state.add_finding(finding.summary, finding.evidence, pinned=finding.pinned)
        if args.next_steps is not None:
            state.next_steps = list(args.next_steps)
        open_tasks = sum(1 for task in state.tasks if task.status in ("pending", "in_progress"))
        return UpdateStateOutput(
            tasks=[task.id for task in args.tasks],
            findings_recorded=len(args.findings),
            open_tasks=open_tasks,
            next_steps=list(state.next_steps),
        )
