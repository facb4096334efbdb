"""What the policy asks a provider for, what comes back, and how provider calls fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agent.policies.llm.models import ServerFacts
from agent.policies.llm.pricing import TokenCounts
from agent.policies.llm.turns import AssistantTurn, ReasoningRecord, ToolCallRecord, UserTurn


@dataclass
class ModelRequest:
    """One prompt. ``turns`` alternate and end with a user turn; ``cache_breakpoints`` are indexes of
    turns that end a reusable prefix (prompt-cache breakpoints go there, on providers that take them)."""

    system: str
    tools: list[dict[str, Any]]
    turns: list[AssistantTurn | UserTurn]
    cache_breakpoints: list[int] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    # A stable key for the provider's prompt cache (the run id): OpenAI routes equal keys to one cache.
    cache_key: str = ""


class ModelReply(BaseModel):
    """One reply. ``stop_reason`` uses the provider's words; ``refusal_category`` is set when the model
    declined (Anthropic's ``stop_details.category``, or ``content_filter`` / ``refusal`` on OpenAI)."""

    text: str = ""
    calls: list[ToolCallRecord] = Field(default_factory=list)
    reasoning: list[ReasoningRecord] = Field(default_factory=list)
    stop_reason: str = ""
    refusal_category: str = ""
    refusal_explanation: str = ""
    tokens: TokenCounts = Field(default_factory=TokenCounts)
    model: str = ""


class Provider(Protocol):
    """A model API. ``complete`` makes exactly one HTTP request (retries live in the caller). ``wire`` is
    the format it speaks (``anthropic``, ``chat`` or ``responses``): reasoning is replayed only on it."""

    name: str
    model: str
    wire: str

    def complete(self, request: ModelRequest) -> ModelReply: ...

    def facts(self) -> ServerFacts:
        """What the API or server reports about the model; empty when it reports nothing (never raises)."""
        ...

    def close(self) -> None: ...


class IncompleteResponse(Exception):
    """The response ended early or could not be read (a stream cut mid-message, say); worth a retry."""


class ModelUnavailable(Exception):
    """The model could not be reached or refused the request; carries what the human needs to decide."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        elapsed_seconds: float,
        errors: list[str],
        retryable: bool,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.elapsed_seconds = elapsed_seconds
        self.errors = errors
        self.retryable = retryable
        self.status_code = status_code
