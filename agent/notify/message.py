"""What a notification says: one message, rendered as text or JSON by each channel.

Every message carries the goal, what was tried, the evidence, the best hypothesis, what is needed
from the human, and the exact commands to answer, resume and look at the state. It is redacted as a
whole before any channel sees it.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agent.escalation import answer_command, resume_command
from agent.state import ProjectState, Question
from tools.redact import redact_value

EventName = Literal["blocked", "limit", "done", "failed"]

TITLES: dict[str, str] = {
    "blocked": "needs a human",
    "limit": "budget reached",
    "done": "goal reached",
    "failed": "run failed",
}


class NotificationMessage(BaseModel):
    event: EventName
    title: str
    run_id: str
    goal: str
    status: str
    step: int
    needed: str
    question_id: str | None = None
    options: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    hypothesis: str = ""
    tried: list[str] = Field(default_factory=list)
    summary: str | None = None
    answer_command: str | None = None
    resume_command: str | None = None
    status_command: str

    def text(self) -> str:
        """Plain text for email, ntfy, command stdin and desktop pop-ups."""
        lines = [
            self.title,
            "",
            f"Goal: {self.goal}",
            f"Run {self.run_id}: {self.status} at step {self.step}",
            "",
            f"Needed: {self.needed}",
        ]
        if self.options:
            lines.append(f"Options: {' | '.join(self.options)}")
        if self.summary:
            lines += ["", f"Summary: {self.summary}"]
        if self.evidence:
            lines += ["", "Evidence:", *(f"  - {item}" for item in self.evidence)]
        if self.hypothesis:
            lines += ["", f"Best hypothesis: {self.hypothesis}"]
        if self.tried:
            lines += ["", "What was tried:", *(f"  - {item}" for item in self.tried)]
        lines.append("")
        if self.answer_command:
            lines.append(f"Answer: {self.answer_command}")
        if self.resume_command:
            lines.append(f"Resume: {self.resume_command}")
        lines.append(f"Status: {self.status_command}")
        return "\n".join(lines) + "\n"


def build_message(
    event: EventName, state: ProjectState, state_dir: Path, question: Question | None = None, tried_limit: int = 8
) -> NotificationMessage:
    state_dir = state_dir.resolve()
    tried = [f"step {finding.step}: {finding.summary}" for finding in state.findings[-tried_limit:]]
    evidence = list(question.evidence) if question else []
    if not evidence and state.findings:
        evidence = list(state.findings[-1].evidence)
    waiting = event in ("blocked", "limit")
    if question is not None:
        needed = f"an answer to question {question.id}: {question.question}"
    elif event == "done":
        needed = "nothing; review the results"
    else:
        needed = "a look at the failure (state and journal are in the state directory), then a resume"
    headline = question.question if question is not None else (state.summary or state.goal)
    message = NotificationMessage(
        event=event,
        title=f"opsloop {TITLES[event]}: {headline}"[:200],
        run_id=state.run_id,
        goal=state.goal,
        status=state.status,
        step=state.step,
        needed=needed,
        question_id=question.id if question else None,
        options=list(question.options) if question else [],
        evidence=evidence,
        hypothesis=question.hypothesis if question else "",
        tried=tried,
        summary=state.summary,
        answer_command=answer_command(
            state_dir, question.id if question else None, bool(question and question.approval_word)
        )
        if waiting
        else None,
        resume_command=resume_command(state_dir) if event != "done" else None,
        status_command=f"agent status {shlex.quote(str(state_dir))}",
    )
    return NotificationMessage.model_validate(redact_value(message.model_dump(mode="json")))
