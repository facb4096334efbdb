"""The continue-or-ask loop: decide, act, record, until the goal is reached or a human is needed.

Each step: check the budgets, run stuck detection, ask the policy for a decision, save it (with the
policy's memory) as the pending step, then run its tool calls one by one: journal the intent, run,
save the result into the pending step, journal the result. Closing the step hands the results to the
next decision. A crash at any point is settled on resume by :mod:`agent.recovery`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Literal

from agent.actions import Action, Ask, Observation, ToolCall
from agent.escalation import record_question
from agent.events import Blocked, GoalReached, LimitReached, RunFailed
from agent.limits import check_limits
from agent.policies.base import Policy, PolicyView
from agent.recovery import NOT_RUN, recover_pending_step
from agent.state import PendingStep, ProjectState, Question
from agent.store import StateStore, StateWriteError
from agent.stuck import StuckDetector
from tools.base import APPROVAL_WORD, NeedsApproval, ToolContext, ToolRegistry, ToolResult
from tools.processes import adopt_unrecorded

ExitEvent = Literal["done", "blocked", "limit", "failed"]
ExitHandler = Callable[[ExitEvent, Question | None], None]


class Agent:
    def __init__(
        self,
        policy: Policy,
        registry: ToolRegistry,
        context: ToolContext,
        store: StateStore,
        on_exit: ExitHandler = lambda event, question: None,
        progress: Callable[[str], None] = lambda line: None,
        stuck: StuckDetector | None = None,
    ) -> None:
        self.policy, self.registry, self.context, self.store = policy, registry, context, store
        self.on_exit, self.progress = on_exit, progress
        self.stuck = stuck or StuckDetector()
        if not isinstance(context.state, ProjectState):  # tools see only the ToolState part of it
            raise TypeError("the agent's tool context must carry the project state document")
        self.state: ProjectState = context.state

    def run(self) -> ExitEvent:
        """Run until done, blocked or failed; returns ``done``, ``blocked``, ``limit`` or ``failed``.
        Unexpected errors are recorded, the state is saved, and the error propagates."""
        started, wall_before = time.monotonic(), self.state.usage.wall_seconds
        self.state.status, self.state.policy = "running", self.policy.name
        try:
            for note in recover_pending_step(self.state, self.store.journal):
                self.progress(f"recovered {note}")
            while True:
                self.state.usage.wall_seconds = wall_before + time.monotonic() - started
                self.step()
        except GoalReached as event:
            self.state.status, self.state.summary = "done", event.summary
            return self._exit("done", None)
        except Blocked as event:
            self.state.status = "blocked"
            kind: ExitEvent = "limit" if isinstance(event, LimitReached) else "blocked"
            return self._exit(kind, record_question(self.state, event.ask))
        except RunFailed as event:
            self.state.status = "failed"
            self.state.add_finding(f"run failed: {event.reason}")
            return self._exit("failed", None)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: like a crash, resumable; nothing to notify
            self.store.journal.record("event", event="interrupted", step=self.state.step)
            raise
        except BaseException as error:
            self.state.status = "failed"
            self.state.add_finding(f"unexpected failure: {type(error).__name__}: {error}")
            with contextlib.suppress(StateWriteError):  # a full disk must not keep the human uninformed
                self.store.journal.record("event", event="failed", step=self.state.step, error=str(error))
                self.store.save(self.state)
            self.on_exit("failed", None)
            raise
        finally:
            self.state.usage.wall_seconds = wall_before + time.monotonic() - started
            self.store.save(self.state)

    def step(self) -> None:
        """Carry out the pending decision (or a new one): run its calls, then stop at an ask or a finish."""
        pending = self.state.loop.pending or self._decide()
        for action in pending.actions:
            if isinstance(action, ToolCall) and action.id in pending.results:
                continue  # finished before a restart
            stop = self._call(action, pending) if isinstance(action, ToolCall) else action
            if stop is not None:
                self._close(pending)
                raise Blocked(stop) if isinstance(stop, Ask) else GoalReached(stop.summary)
        self._close(pending)

    def _decide(self) -> PendingStep:
        check_limits(self.state)
        observations = self.state.loop.observations
        nudge = self.stuck.check(self.state, observations)
        answers = [item for item in self.state.questions if item.answer is not None and not item.seen_by_policy]
        for question in answers:
            question.seen_by_policy = True
        decision = self.policy.decide(
            PolicyView(
                state=self.state,
                state_dir=self.store.state_dir,
                tool_schemas=self.registry.schemas(),
                observations=observations,
                new_answers=answers,
                nudge=nudge,
            )
        )
        self.state.usage.add(decision.usage)
        pending = PendingStep(step=self.state.step, thought=decision.thought, actions=_unique_ids(decision.actions))
        self.state.loop.pending, self.state.loop.observations = pending, []
        self.store.save(self.state)  # the decision and the policy's memory are committed together
        self.store.journal.record(
            "decision",
            step=pending.step,
            thought=pending.thought,
            actions=[action.model_dump(mode="json") for action in pending.actions],
        )
        return pending

    def _call(self, call: ToolCall, pending: PendingStep) -> Ask | None:
        """Run one call and save its result; returns the question when the tool needs approval."""
        self.store.journal.record(
            "intent", step=pending.step, call_id=call.id, tool=call.tool, arguments=call.arguments
        )
        shown = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        self.progress(f"step {pending.step}: {call.tool} {shown[:120]}")
        ask = None
        try:
            result = self.registry.execute(call.tool, call.arguments, self.context)
        except NeedsApproval as request:
            ask = Ask(
                question=f"{call.tool} needs approval: {request.reason}",
                evidence=request.evidence,
                options=request.options,
                context=f"tool call {call.tool} {call.arguments}. Only the answer {APPROVAL_WORD!r} (or "
                "`agent ask --approve ID`) approves it; any other answer denies it and reaches the agent as guidance.",
                question_kind="approval",
                approval_word=APPROVAL_WORD,
            )
            result = ToolResult(
                tool=call.tool,
                ok=False,
                error=f"needs approval: {request.reason}; a human "
                "was asked, and the answer comes with the next decision",
            )
        self.progress(f"  -> {'ok' if result.ok else 'error: ' + (result.error or '')[:160]}")
        if result.interrupted:  # a dropped connection: what it started may be running unrecorded
            for note in adopt_unrecorded(self.state, self.context.all_hosts()):
                self.progress(f"  {note}")
        pending.results[call.id] = Observation(
            call_id=call.id, tool=call.tool, arguments=call.arguments, result=result, interrupted=result.interrupted
        )
        self.store.save(self.state)
        self.store.journal.record(
            "result", step=pending.step, call_id=call.id, tool=call.tool, result=result.model_dump(mode="json")
        )
        return ask

    def _close(self, pending: PendingStep) -> None:
        """End the step: its results become the next decision's observations."""
        for call in pending.calls():
            if call.id not in pending.results:  # planned after an ask or a call that needs approval
                pending.results[call.id] = Observation(
                    call_id=call.id,
                    tool=call.tool,
                    arguments=call.arguments,
                    result=ToolResult(tool=call.tool, ok=False, error=NOT_RUN),
                )
        self.state.loop.pending = None
        self.state.loop.observations = [pending.results[call.id] for call in pending.calls()]
        self.state.step += 1
        self.state.usage.steps = self.state.step
        self.store.save(self.state)

    def _exit(self, event: ExitEvent, question: Question | None) -> ExitEvent:
        self.store.journal.record(
            "event",
            event=event,
            step=self.state.step,
            status=self.state.status,
            question_id=question.id if question else None,
        )
        self.store.save(self.state)
        self.on_exit(event, question)  # notifications are recorded in the state, saved on the way out
        return event


def _unique_ids(actions: list[Action]) -> list[Action]:
    """Call ids key the results, so they must be unique: a repeated id gets its position appended."""
    unique: list[Action] = []
    for index, action in enumerate(actions):
        if isinstance(action, ToolCall) and any(
            isinstance(other, ToolCall) and other.id == action.id for other in unique
        ):
            action = action.model_copy(update={"id": f"{action.id}-{index}"})
        unique.append(action)
    return unique
