"""Pick up a step that a crash cut short, without losing a result or running a call twice.

The loop saves each decision (``state.loop.pending``) before its first tool call, journals an
``intent`` before each call, and saves the call's result into the pending step before journaling
the ``result``. After a crash, the pending step and the journal together say, for every call:

- result saved in the state: finished; its result stands (and is journaled if the journal missed it);
- intent journaled, no saved result: it was running. It is *not* run again: its observation says
  "interrupted, verify before repeating", and what the decision planned after it is dropped, so
  the policy decides again with the facts;
- no intent: it never started, and the loop runs it now as planned.
"""

from __future__ import annotations

from agent.actions import Observation, ToolCall
from agent.journal import Journal
from agent.state import PendingStep, ProjectState
from tools.base import ToolResult

INTERRUPTED = (
    "interrupted: the agent stopped while this call was running, so its result was lost and "
    "it may or may not have taken effect. Verify its effect (status, logs, files) before "
    "repeating it."
)
NOT_RUN = (
    "not run: the step ended before this call (an earlier call was interrupted or needs approval, "
    "or the decision asked a human first); decide again whether it is still needed."
)


def recover_pending_step(state: ProjectState, journal: Journal) -> list[str]:
    """Settle the pending step after a crash. Returns one line per call that needed recovery."""
    pending = state.loop.pending
    if pending is None:
        return []
    entries = journal.records()
    if not any(entry.get("kind") == "decision" and entry.get("step") == pending.step for entry in entries):
        journal.record(
            "decision",
            step=pending.step,
            thought=pending.thought,
            actions=[action.model_dump(mode="json") for action in pending.actions],
            recovered=True,
        )
    started = {
        entry.get("call_id") for entry in entries if entry.get("kind") == "intent" and entry.get("step") == pending.step
    }
    journaled = {entry.get("call_id") for entry in entries if entry.get("kind") == "result"}
    notes: list[str] = []
    cut_short = False
    for action in list(pending.actions):
        if not isinstance(action, ToolCall):
            if cut_short:
                pending.actions.remove(action)  # an ask or finish planned after the interruption
            continue
        if action.id in pending.results:
            if action.id not in journaled:
                _journal_result(journal, pending, pending.results[action.id])
            continue
        if action.id not in started and not cut_short:
            continue  # never started: the loop runs it now
        message, interrupted = (NOT_RUN, False) if cut_short else (INTERRUPTED, True)
        cut_short = True
        observation = Observation(
            call_id=action.id,
            tool=action.tool,
            arguments=action.arguments,
            result=ToolResult(tool=action.tool, ok=False, error=message),
            interrupted=interrupted,
        )
        pending.results[action.id] = observation
        if action.id not in journaled:  # a crash during an earlier recovery may have journaled it already
            _journal_result(journal, pending, observation)
        notes.append(f"step {pending.step}: {action.tool} ({action.id}) {message.split(':')[0]}")
    return notes


def _journal_result(journal: Journal, pending: PendingStep, observation: Observation) -> None:
    journal.record(
        "result",
        step=pending.step,
        call_id=observation.call_id,
        tool=observation.tool,
        interrupted=observation.interrupted,
        result=observation.result.model_dump(mode="json"),
        recovered=True,
    )
