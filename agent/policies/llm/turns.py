"""The provider-neutral conversation: assistant turns with tool calls, user turns with their results.

The policy stores and persists these; the wire modules turn them into Anthropic or OpenAI messages.
Every tool call an assistant turn makes is answered by exactly one :class:`ToolResultRecord` in the
user turn that follows it, matched by call id.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class ToolCallRecord(BaseModel):
    id: str
    name: str
    # A dict when the model produced a JSON object; the raw text otherwise (answered with an error).
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ToolResultRecord(BaseModel):
    call_id: str
    name: str
    content: str
    is_error: bool = False
    pruned: bool = False


class AssistantTurn(BaseModel):
    role: Literal["assistant"] = "assistant"
    step: int = 0
    text: str = ""
    calls: list[ToolCallRecord] = Field(default_factory=list)


class UserTurn(BaseModel):
    role: Literal["user"] = "user"
    step: int = 0
    results: list[ToolResultRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


Turn = Annotated[AssistantTurn | UserTurn, Field(discriminator="role")]


def arguments_json(arguments: dict[str, Any] | str) -> str:
    """The arguments as the model wrote them: JSON text for a dict, the raw text otherwise."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def turn_chars(turn: AssistantTurn | UserTurn) -> int:
    """Characters this turn adds to a prompt (the basis of the token estimate)."""
    if isinstance(turn, AssistantTurn):
        return len(turn.text) + sum(len(call.name) + len(arguments_json(call.arguments)) + 40 for call in turn.calls)
    return sum(len(result.content) + 60 for result in turn.results) + sum(len(note) + 10 for note in turn.notes)


def estimate_tokens(chars: int, chars_per_token: float) -> int:
    return int(chars / chars_per_token) + 1


def merge_turns(turns: list[AssistantTurn | UserTurn]) -> list[AssistantTurn | UserTurn]:
    """Join consecutive turns of the same role (both APIs want roles to alternate)."""
    merged: list[AssistantTurn | UserTurn] = []
    for turn in turns:
        previous = merged[-1] if merged else None
        if isinstance(turn, UserTurn) and isinstance(previous, UserTurn):
            merged[-1] = UserTurn(
                step=previous.step, results=[*previous.results, *turn.results], notes=[*previous.notes, *turn.notes]
            )
        elif isinstance(turn, AssistantTurn) and isinstance(previous, AssistantTurn):
            text = "\n\n".join(part for part in (previous.text, turn.text) if part)
            merged[-1] = AssistantTurn(step=turn.step, text=text, calls=[*previous.calls, *turn.calls])
        else:
            merged.append(turn)
    return merged


def paired_results(turns: list[AssistantTurn | UserTurn]) -> list[AssistantTurn | UserTurn]:
    """Make the sequence valid for both wire formats, whatever the window looks like.

    A result whose call is not in the assistant turn just before it becomes a text note; a call with
    no result in the next turn gets an error result saying so. Input turns are merged first.
    """
    turns = merge_turns(turns)
    fixed: list[AssistantTurn | UserTurn] = []
    for index, turn in enumerate(turns):
        if isinstance(turn, AssistantTurn):
            fixed.append(turn)
            following = turns[index + 1] if index + 1 < len(turns) else None
            if turn.calls and not isinstance(following, UserTurn):
                fixed.append(UserTurn(step=turn.step, results=_missing_results(turn, set())))
            continue
        previous = turns[index - 1] if index > 0 else None
        expected = {call.id for call in previous.calls} if isinstance(previous, AssistantTurn) else set()
        matched = [result for result in turn.results if result.call_id in expected]
        matched = list({result.call_id: result for result in matched}.values())
        orphans = [
            f"Result of an earlier call {result.name} ({result.call_id}): {result.content}"
            for result in turn.results
            if result.call_id not in expected
        ]
        if isinstance(previous, AssistantTurn):
            matched += _missing_results(previous, {result.call_id for result in matched})
            order = {call.id: position for position, call in enumerate(previous.calls)}
            matched.sort(key=lambda result: order[result.call_id])
        fixed.append(UserTurn(step=turn.step, results=matched, notes=[*orphans, *turn.notes]))
    return fixed


def _missing_results(turn: AssistantTurn, answered: set[str]) -> list[ToolResultRecord]:
    return [
        ToolResultRecord(
            call_id=call.id,
            name=call.name,
            is_error=True,
            content="No result was recorded for this call; check the state document before repeating it.",
        )
        for call in turn.calls
        if call.id not in answered
    ]
