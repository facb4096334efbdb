"""The MCP client's tool calls, made like a run's steps: journaled, saved, one at a time.

Each call is one step of the run: it is journaled as an ``intent`` before it runs and a ``result``
after (both with ``source: "mcp"``), the state document is saved in between, and the step advances,
so findings, saved outputs and process logs of different calls are told apart and ``agent status`` /
``agent resume`` see everything the client did. Calls run one at a time (a lock), so a tool always
sees the document as the previous call left it. A call the tool refuses without a human's approval
records an approval question and ends as :class:`ApprovalRequired`; the verdict is recorded with
:meth:`McpCalls.record_verdict`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from agent.actions import Ask
from agent.escalation import answer_question, record_question
from agent.state import ProjectState, Question
from agent.store import StateStore
from tools.base import APPROVAL_WORD, NeedsApproval, ToolContext, ToolRegistry, ToolResult

SOURCE = "mcp"
Verdict = Literal["approve", "deny"]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ApprovalRequired:
    """The tool did not act: a human must approve ``question`` first (``reason`` says why)."""

    question: Question
    reason: str
    evidence: list[str]


CallOutcome = ToolResult | ApprovalRequired


class McpCalls:
    """Runs the client's calls on one state directory (whose lock the caller holds)."""

    def __init__(self, store: StateStore, state: ProjectState, context: ToolContext, registry: ToolRegistry) -> None:
        self.store, self.state, self.context, self.registry = store, state, context, registry
        self._lock = threading.Lock()

    def execute(self, name: str, arguments: dict[str, Any], progress: Progress | None = None) -> CallOutcome:
        """Run one call; never raises for a tool's failure (it is an error result). ``progress`` also gets
        the tool's progress lines (they still go to the server's own output)."""
        with self._lock, self._reporting(progress):
            step = self.state.step
            call_id = f"{SOURCE}-{step}"
            self.store.journal.record(
                "intent", step=step, call_id=call_id, tool=name, arguments=arguments, source=SOURCE
            )
            outcome: CallOutcome
            try:
                outcome = result = self.registry.execute(name, arguments, self.context)
            except NeedsApproval as request:
                question = record_question(self.state, _approval_ask(name, arguments, request))
                outcome = ApprovalRequired(question, request.reason, list(request.evidence))
                result = ToolResult(
                    tool=name, ok=False, error=f"needs approval: {request.reason} (question {question.id})"
                )
            self.state.step = step + 1
            self.state.usage.steps = self.state.step
            self.state.usage.wall_seconds += result.duration_seconds
            self.store.save(self.state)
            self.store.journal.record(
                "result", step=step, call_id=call_id, tool=name, result=result.model_dump(mode="json"), source=SOURCE
            )
            return outcome

    @contextmanager
    def _reporting(self, progress: Progress | None) -> Iterator[None]:
        if progress is None:
            yield
            return
        own = self.context.progress

        def both(line: str) -> None:
            own(line)
            progress(line)

        self.context.progress = both
        try:
            yield
        finally:
            self.context.progress = own

    def record_verdict(self, question_id: str, verdict: Verdict, how: str) -> Question:
        """Record the human's verdict on an approval question as the exact word ``approve`` or ``deny``."""
        with self._lock:
            question = answer_question(self.state, verdict, question_id, decision=verdict)
            self.store.save(self.state)
            self.store.journal.record("answer", question_id=question.id, answer=verdict, how=how, source=SOURCE)
            return question

    def pending_approval(self, question_id: str | None) -> Question | None:
        """The open approval question with this id, or None."""
        for question in self.state.pending_questions():
            if question.id == question_id and question.kind == "approval":
                return question
        return None

    def finish(self, summary: str) -> None:
        """The client says the goal is met: the run is done, with ``summary`` as its closing report."""
        with self._lock:
            self.state.status, self.state.summary = "done", summary
            self.store.save(self.state)
            self.store.journal.record("event", event="done", step=self.state.step, status="done", source=SOURCE)


def _approval_ask(name: str, arguments: dict[str, Any], request: NeedsApproval) -> Ask:
    return Ask(
        question=f"{name} needs approval: {request.reason}",
        evidence=request.evidence,
        options=[APPROVAL_WORD, "deny"],
        context=f"tool call {name} {arguments} from the MCP client",
        question_kind="approval",
        approval_word=APPROVAL_WORD,
    )
