"""The continue-or-ask loop: step until an exit event, check limits in one place, save in ``finally``."""

from __future__ import annotations

import time
from collections.abc import Callable

from agent.actions import Ask, Decision, Finish, Observation, ToolCall
from agent.escalation import record_question
from agent.events import Blocked, GoalReached, LimitReached, RunFailed
from agent.limits import check_limits
from agent.policies.base import Policy, PolicyView
from agent.store import StateStore
from agent.stuck import StuckDetector
from tools.base import NeedsApproval, ToolContext, ToolRegistry


class Agent:
    def __init__(self, policy: Policy, registry: ToolRegistry, context: ToolContext, store: StateStore,
                 on_exit: Callable[[str, Ask | None], None] = lambda event, ask: None,
                 progress: Callable[[str], None] = lambda line: None) -> None:
        self.policy, self.registry, self.context, self.store = policy, registry, context, store
        self.on_exit, self.progress = on_exit, progress
        self.stuck = StuckDetector()
        self.state = context.state

    def run(self) -> None:
        """Run until done, blocked or failed. The state is saved whatever happens."""
        started, wall_before = time.monotonic(), self.state.usage.wall_seconds
        self.state.status, self.state.policy = "running", self.policy.name
        observations = self.store.journal.interrupted_observations()
        try:
            while True:
                self.state.usage.wall_seconds = wall_before + time.monotonic() - started
                observations = self.step(observations)
        except GoalReached as event:
            self.state.status, self.state.summary = "done", event.summary
            self._exit("done", None)
        except LimitReached as event:
            self._block(event.ask, "limit")
        except Blocked as event:
            self._block(event.ask, "blocked")
        except RunFailed as event:
            self.state.status = "failed"
            self.state.add_finding(f"run failed: {event.reason}")
            self._exit("failed", None)
        except BaseException as error:
            self.state.status = "failed"
            self.state.add_finding(f"unexpected failure: {type(error).__name__}: {error}")
            self.store.journal.record("event", event="failed", error=f"{type(error).__name__}: {error}")
            raise
        finally:
            self.state.usage.wall_seconds = wall_before + time.monotonic() - started
            self.store.save(self.state)

    def step(self, observations: list[Observation]) -> list[Observation]:
        check_limits(self.state)
        decision = self.policy.decide(self._view(observations))
        self._account(decision)
        results: list[Observation] = []
        for action in decision.actions:
            if isinstance(action, Ask):
                raise Blocked(action)
            if isinstance(action, Finish):
                raise GoalReached(action.summary)
            results.append(self._call(action))
        self.state.step += 1
        self.state.usage.steps = self.state.step
        self.store.save(self.state)
        return results

    def _view(self, observations: list[Observation]) -> PolicyView:
        answers = [question for question in self.state.questions
                   if question.answer is not None and not question.seen_by_policy]
        for question in answers:
            question.seen_by_policy = True
        nudge = self.stuck.check(self.state, observations)
        return PolicyView(state=self.state, state_dir=self.store.state_dir, tool_schemas=self.registry.schemas(),
                          observations=observations, new_answers=answers, nudge=nudge)

    def _account(self, decision: Decision) -> None:
        usage, spent = self.state.usage, decision.usage
        usage.input_tokens += spent.input_tokens
        usage.output_tokens += spent.output_tokens
        usage.cached_input_tokens += spent.cached_input_tokens
        usage.cost_usd += spent.cost_usd
        usage.model_calls += spent.model_calls
        self.store.journal.record("decision", step=self.state.step, thought=decision.thought,
                                  actions=[action.model_dump(mode="json") for action in decision.actions])

    def _call(self, call: ToolCall) -> Observation:
        self.store.journal.record("intent", step=self.state.step, call_id=call.id, tool=call.tool,
                                  arguments=call.arguments)
        self.progress(f"step {self.state.step}: {call.tool}")
        try:
            result = self.registry.execute(call.tool, call.arguments, self.context)
        except NeedsApproval as request:
            self.store.journal.record("result", call_id=call.id, tool=call.tool, needs_approval=request.reason)
            raise Blocked(Ask(question=f"{call.tool} needs approval: {request.reason}",
                              evidence=request.evidence, options=request.options,
                              context=f"tool call {call.tool} {call.arguments}", question_kind="approval")) from None
        self.store.journal.record("result", call_id=call.id, tool=call.tool, result=result.model_dump(mode="json"))
        return Observation(call_id=call.id, tool=call.tool, arguments=call.arguments, result=result)

    def _block(self, ask: Ask, event: str) -> None:
        self.state.status = "blocked"
        record_question(self.state, ask)
        self._exit(event, ask)

    def _exit(self, event: str, ask: Ask | None) -> None:
        self.store.journal.record("event", event=event, step=self.state.step, status=self.state.status)
        self.store.save(self.state)
        self.on_exit(event, ask)
