"""Stuck detection: nudge the policy once, then escalate to a human.

Two signs of a stuck run: the same tool calls with the same results several steps in a row, or K
steps in which nothing moved: the state document did not change and no observation brought anything
not already seen in that window. A poll whose answer changes (a log growing, memory filling while a
model loads) is new information each time, so polling a job that makes progress is never stuck.
Volatile fields (durations, saved-output paths) are ignored when comparing results.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from typing import Any

from agent.actions import Ask, Observation
from agent.events import Blocked
from agent.state import ProjectState

_VOLATILE_RESULT_FIELDS = {"duration_seconds", "full_output_path"}


def _digest(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _newest(items: list[Any]) -> Any:
    return items[-1].model_dump(mode="json") if items else None


def state_fingerprint(state: ProjectState) -> str:
    """What counts as progress in the document, read in time independent of the run's length: the
    growing lists by their newest entry (numbered or with an id, so a new entry always differs; old
    ones move to the journal), the small mutable parts whole. (Timestamps, the step counter, usage and
    the loop's bookkeeping change every step without meaning progress.)"""
    return _digest(
        {
            "findings": _newest(state.findings),
            "benchmarks": _newest(state.benchmarks),
            "patches": _newest(state.patches),
            "tasks": [task.model_dump(mode="json") for task in state.tasks],
            "next_steps": state.next_steps,
            "processes": [(record.name, record.pid, record.state, record.exit_code) for record in state.processes],
            "questions": [(question.id, question.answer) for question in state.questions],
            "status": state.status,
            "summary": state.summary,
            "model": state.model.model_dump(mode="json"),
            "probed_at": state.environment.probed_at,
        }
    )


def observations_fingerprint(observations: list[Observation]) -> str:
    return _digest(
        [
            {
                "tool": item.tool,
                "arguments": item.arguments,
                "result": item.result.model_dump(mode="json", exclude=_VOLATILE_RESULT_FIELDS),
            }
            for item in observations
        ]
    )


class StuckDetector:
    def __init__(self, repeat_limit: int = 3, idle_limit: int = 8) -> None:
        self.repeat_limit, self.idle_limit = repeat_limit, idle_limit
        self._last_calls: str | None = None
        self._repeats = 0
        self._last_state: str | None = None
        self._idle_steps = 0
        self._recent: deque[str] = deque(maxlen=idle_limit)
        self._nudged = False

    def check(self, state: ProjectState, observations: list[Observation]) -> str | None:
        """Call before each decision with the previous step's results. Returns a nudge the first time
        the run looks stuck, raises :class:`Blocked` if it still looks stuck after the nudge, and
        forgets the nudge once the run moves again."""
        reason = self._observe(state, observations)
        if reason is None:
            self._nudged = False
            return None
        if not self._nudged:
            self._nudged = True
            return (
                f"You seem to be stuck: {reason}. Do something different: check your assumptions, "
                "try another approach, or ask the human with the evidence you have."
            )
        raise Blocked(
            Ask(
                question=f"The run seems stuck ({reason}) and a nudge did not help. How should it proceed?",
                context="The policy kept going without new information after being told it was repeating itself.",
                evidence=[_describe(item) for item in observations][-5:],
                options=["a hint or instruction for the next step", "continue anyway"],
                hypothesis="The policy lacks information or a remedy it cannot find on its own.",
                question_kind="stuck",
            )
        )

    def _observe(self, state: ProjectState, observations: list[Observation]) -> str | None:
        calls = observations_fingerprint(observations)
        current_state = state_fingerprint(state)
        if observations and calls == self._last_calls:
            self._repeats += 1
        else:
            self._repeats = 1 if observations else 0
        moved = current_state != self._last_state or (bool(observations) and calls not in self._recent)
        self._idle_steps = 0 if moved else self._idle_steps + 1
        self._last_calls, self._last_state = calls, current_state
        self._recent.append(calls)
        if self._repeats >= self.repeat_limit:
            tools = ", ".join(sorted({item.tool for item in observations}))
            return f"the same call ({tools}) returned the same result {self._repeats} times in a row"
        if self._idle_steps >= self.idle_limit:
            return f"nothing changed in the state and nothing new was observed for {self._idle_steps} steps"
        return None


def _describe(observation: Observation) -> str:
    result = observation.result
    outcome = f"error: {result.error}" if not result.ok else f"ok: {json.dumps(result.output)[:300]}"
    return f"{observation.tool}({json.dumps(observation.arguments)[:200]}) -> {outcome}"
