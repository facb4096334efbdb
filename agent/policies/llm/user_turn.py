"""The user turn that answers the model's last tool calls: every call gets exactly one result, by id.

Results come from the loop's observations; a call whose observation is missing (the run stopped to ask a
human, hit a limit or crashed) is answered from the journal when it recorded a result, from the human's
answers for ``ask_human``, and otherwise with an error saying no result was recorded. Human answers and
supervisor nudges travel as text notes. All text is redacted before it is sent or stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.actions import Observation
from agent.journal import JOURNAL_FILE, Journal
from agent.policies.base import PolicyView
from agent.policies.llm.builtin_tools import ASK_HUMAN, FINISH
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, ToolResultRecord, UserTurn
from agent.state import Question
from tools.redact import redact_text

INTERRUPTED_NOTE = (
    "INTERRUPTED: this call was started but its result was lost when the agent stopped. "
    "Its effect is unknown: verify it before repeating the call."
)
MISSING_NOTE = (
    "No result was handed back for this call (the run stopped before its result reached you). "
    "Check the state document and the tool's effect before repeating it."
)


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n[... {len(text) - max_chars} more characters cut]"


def result_text(result: dict[str, Any]) -> tuple[str, bool]:
    """Text for the model from a dumped ``ToolResult``, and whether it is an error."""
    if result.get("ok"):
        text = json.dumps(result.get("output"), ensure_ascii=False)
        if result.get("full_output_path"):
            text += f"\n(output cut; the full output is in {result['full_output_path']})"
        return text, False
    return str(result.get("error") or "the tool failed without a message"), True


def from_observation(observation: Observation, max_chars: int) -> ToolResultRecord:
    text, is_error = result_text(observation.result.model_dump(mode="json"))
    if observation.interrupted:
        text, is_error = f"{INTERRUPTED_NOTE}\n{text}", True
    return ToolResultRecord(
        call_id=observation.call_id,
        name=observation.tool,
        is_error=is_error,
        content=_clip(redact_text(text), max_chars),
    )


def from_journal(state_dir: Path, calls: list[ToolCallRecord], max_chars: int) -> dict[str, ToolResultRecord]:
    """Results the journal recorded for these calls (the loop journals each result before returning)."""
    wanted = {call.id: call for call in calls}
    found: dict[str, ToolResultRecord] = {}
    for record in Journal(state_dir / JOURNAL_FILE).records():
        call = wanted.get(str(record.get("call_id")))
        if record.get("kind") != "result" or call is None:
            continue
        if isinstance(record.get("result"), dict):
            text, is_error = result_text(record["result"])
        elif record.get("needs_approval"):
            text, is_error = (
                (
                    f"Not run: the tool needs a human's approval ({record['needs_approval']}); the "
                    "run paused to ask. The answer, if any, is in this message."
                ),
                True,
            )
        else:
            continue
        found[call.id] = ToolResultRecord(
            call_id=call.id, name=call.name, is_error=is_error, content=_clip(redact_text(text), max_chars)
        )
    return found


def answers_text(questions: list[Question]) -> str:
    parts = [
        f'The human answered question {question.id} ("{question.question}"): {question.answer}'
        for question in questions
    ]
    return redact_text("\n".join(parts))


def unanswered_calls(window: list[AssistantTurn | UserTurn]) -> list[ToolCallRecord]:
    """Calls of the last assistant turn that no later user turn answered yet."""
    for index in range(len(window) - 1, -1, -1):
        turn = window[index]
        if isinstance(turn, AssistantTurn):
            answered = {
                result.call_id
                for later in window[index + 1 :]
                if isinstance(later, UserTurn)
                for result in later.results
            }
            return [call for call in turn.calls if call.id not in answered]
    return []


def build_user_turn(window: list[AssistantTurn | UserTurn], view: PolicyView, max_chars: int) -> UserTurn:
    pending = unanswered_calls(window)
    observations = {observation.call_id: observation for observation in view.observations}
    recovered: dict[str, ToolResultRecord] = {}
    if any(call.id not in observations and call.name not in (ASK_HUMAN, FINISH) for call in pending):
        recovered = from_journal(view.state_dir, pending, max_chars)
    results: list[ToolResultRecord] = []
    answers_used = False
    for call in pending:
        if call.id in observations:
            results.append(from_observation(observations.pop(call.id), max_chars))
        elif call.name == ASK_HUMAN:
            answers_used = bool(view.new_answers)
            content = answers_text(view.new_answers) or "The run was resumed without an answer to this."
            results.append(ToolResultRecord(call_id=call.id, name=call.name, content=content))
        elif call.name == FINISH:
            results.append(
                ToolResultRecord(
                    call_id=call.id,
                    name=call.name,
                    content=("The run had finished; the operator resumed it. Continue from the state document."),
                )
            )
        else:
            results.append(
                recovered.get(call.id)
                or ToolResultRecord(call_id=call.id, name=call.name, is_error=True, content=MISSING_NOTE)
            )
    notes = [
        f"Result of call {observation.call_id} ({observation.tool}), which this conversation no longer "
        f"holds:\n{from_observation(observation, max_chars).content}"
        for observation in observations.values()
    ]
    if view.new_answers and not answers_used:
        notes.append(answers_text(view.new_answers))
    if view.nudge:
        notes.append(f"Supervisor note: {redact_text(view.nudge)}")
    return UserTurn(step=view.state.step, results=results, notes=notes)
