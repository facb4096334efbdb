"""The provider-neutral conversation: assistant turns with tool calls, user turns with their results.

The policy stores and persists these; the wire modules turn them into Anthropic or OpenAI messages.
Every tool call an assistant turn makes is answered by exactly one :class:`ToolResultRecord` in the
user turn that follows it, matched by call id.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class ReasoningRecord(BaseModel):
    """Provider-native reasoning, kept to be sent back unchanged while its conversation goes on.

    ``thinking`` / ``redacted_thinking``: an Anthropic block (``signature`` holds the signature, or the
    redacted block's opaque data); ``reasoning_item``: an OpenAI Responses reasoning item (``item_id``,
    ``summary`` and ``signature`` = its ``encrypted_content``); ``reasoning_content``: the reasoning text
    an OpenAI-compatible server returned next to tool calls (``field`` names the key it came in).
    """

    kind: Literal["thinking", "redacted_thinking", "reasoning_item", "reasoning_content"]
    text: str = ""
    signature: str = ""
    item_id: str = ""
    summary: list[str] = Field(default_factory=list)
    field: str = "reasoning_content"


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
    # Reasoning to send back, only to the wire and model that produced it (``source``).
    reasoning: list[ReasoningRecord] = Field(default_factory=list)
    source: str = ""

    @property
    def thought(self) -> str:
        """The readable reasoning of this turn (thinking text, summaries), then its text."""
        parts = [record.text or "\n".join(record.summary) for record in self.reasoning]
        return "\n\n".join(part for part in [*parts, self.text] if part)


class UserTurn(BaseModel):
    role: Literal["user"] = "user"
    step: int = 0
    results: list[ToolResultRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # The state document (``state_full``) or what changed in it since the last one, sent after the notes.
    state: str = ""
    state_full: bool = False

    def texts(self) -> list[str]:
        """The text parts of this turn in the order they are sent: notes, then the state part."""
        return [*self.notes, self.state] if self.state else list(self.notes)


Turn = Annotated[AssistantTurn | UserTurn, Field(discriminator="role")]


def arguments_json(arguments: dict[str, Any] | str) -> str:
    """The arguments as the model wrote them: JSON text for a dict, the raw text otherwise."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def turn_chars(turn: AssistantTurn | UserTurn) -> int:
    """Characters this turn adds to a prompt (the basis of the token estimate)."""
    if isinstance(turn, AssistantTurn):
        reasoning = sum(
            len(record.text) + len(record.signature) // 2 + sum(map(len, record.summary)) for record in turn.reasoning
        )
        return (
            len(turn.text)
            + reasoning
            + sum(len(call.name) + len(arguments_json(call.arguments)) + 40 for call in turn.calls)
        )
    return sum(len(result.content) + 60 for result in turn.results) + sum(len(text) + 10 for text in turn.texts())


def estimate_tokens(chars: int, chars_per_token: float) -> int:
    return int(chars / chars_per_token) + 1


def merge_turns(turns: list[AssistantTurn | UserTurn]) -> list[AssistantTurn | UserTurn]:
    """Join consecutive turns of the same role (both APIs want roles to alternate)."""
    merged: list[AssistantTurn | UserTurn] = []
    for turn in turns:
        previous = merged[-1] if merged else None
        if isinstance(turn, UserTurn) and isinstance(previous, UserTurn):
            merged[-1] = UserTurn(
                step=previous.step,
                results=[*previous.results, *turn.results],
                notes=[*previous.texts(), *turn.notes],
                state=turn.state,
                state_full=turn.state_full,
            )
        elif isinstance(turn, AssistantTurn) and isinstance(previous, AssistantTurn):
            text = "\n\n".join(part for part in (previous.text, turn.text) if part)
            merged[-1] = AssistantTurn(
                step=turn.step,
                text=text,
                calls=[*previous.calls, *turn.calls],
                reasoning=[*previous.reasoning, *turn.reasoning],
                source=turn.source if turn.source == previous.source else "",
            )
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
        fixed.append(
            UserTurn(
                step=turn.step,
                results=matched,
                notes=[*orphans, *turn.notes],
                state=turn.state,
                state_full=turn.state_full,
            )
        )
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
