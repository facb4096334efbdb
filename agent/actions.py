"""What a policy can decide, and what the loop hands back to it.

A policy returns a :class:`Decision`: zero or more tool calls, or an :class:`Ask` (stop and ask a
human), or a :class:`Finish` (the goal is met). The loop answers every tool call with exactly one
:class:`Observation`, errors included.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ToolResult


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["tool_call"] = "tool_call"
    id: str
    tool: str
    # A dict when the policy produced valid JSON; the raw text when it did not (it becomes an error result).
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class Ask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["ask"] = "ask"
    question: str
    context: str = ""
    evidence: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)
    hypothesis: str = ""
    question_kind: str = "blocked"
    approval_word: str | None = None  # the one answer that approves (approval questions)


class Finish(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["finish"] = "finish"
    summary: str


Action = Annotated[ToolCall | Ask | Finish, Field(discriminator="kind")]


class ModelUsage(BaseModel):
    """Tokens and money spent by one decision (zero for offline policies)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0

    def add(self, spent: ModelUsage) -> None:
        """Add another decision's spending to this total."""
        for name in ModelUsage.model_fields:
            setattr(self, name, getattr(self, name) + getattr(spent, name))


class Decision(BaseModel):
    thought: str = ""
    actions: list[Action] = Field(default_factory=list)
    usage: ModelUsage = Field(default_factory=ModelUsage)


class Observation(BaseModel):
    """The answer to one tool call. ``interrupted`` marks a call whose result was lost in a crash."""

    call_id: str
    tool: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    result: ToolResult
    interrupted: bool = False
