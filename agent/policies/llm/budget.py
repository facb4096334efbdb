"""How big the conversation window may grow: from the model's real context window, not a fixed number.

The context window comes from the configuration (``llm.context.context_window_tokens``), else from what
the API or server reports (Anthropic's Models API, ``max_model_len`` of an SGLang or vLLM server), else
from the model family. Room for the reply, the system prompt and tools, and the state document is taken
off, and the configured ``window_budget_tokens`` is an upper bound. Token counts are estimates from
characters; the ratio is corrected from the input tokens the API reports for each request. When the
API says the prompt was too long anyway, :meth:`ContextBudget.halve` shrinks the budget for the rest of
the run: to half the size of the window that did not fit.
"""

from __future__ import annotations

import json
from typing import Any

from agent.policies.llm.models import ServerFacts, profile_for
from agent.policies.llm.reply import ModelRequest, Provider
from agent.policies.llm.settings import ANTHROPIC_MAX_OUTPUT_TOKENS, ContextSettings, LlmSettings
from agent.policies.llm.turns import turn_chars

MIN_BUDGET = 1_000
MAX_HALVINGS = 4
SAFETY = 0.85


class ContextBudget:
    def __init__(self, settings: LlmSettings, provider: Provider) -> None:
        self.base = settings.context
        self.settings_ = settings
        self.provider = provider
        self.facts: ServerFacts | None = None
        self.chars_per_token = settings.context.chars_per_token
        self.halvings = 0
        self.cap: int | None = None

    def context_window(self) -> int:
        """The model's context window in tokens (0: unknown)."""
        if self.base.context_window_tokens:
            return self.base.context_window_tokens
        if self.facts is None:
            self.facts = self.provider.facts()
        profile = profile_for(self.provider.name, self.provider.model)
        return self.facts.context_window or profile.context_window

    def _reply_room(self, window: int) -> int:
        configured = self.settings_.max_output_tokens
        if configured is not None:
            return configured
        if self.provider.name == "anthropic":
            return ANTHROPIC_MAX_OUTPUT_TOKENS
        return min(32_000, window // 4)

    def settings(self, tool_schemas: list[dict[str, Any]], system_prompt: str) -> ContextSettings:
        """The context settings in force now: the window budget fitted to the model."""
        budget = self.base.window_budget_tokens
        window = self.context_window()
        if window:
            fixed_chars = len(system_prompt) + len(json.dumps(tool_schemas)) + 4_000
            fixed = int(fixed_chars / self.chars_per_token) + self.base.state_document_max_tokens
            budget = min(budget, int((window - self._reply_room(window) - fixed) * SAFETY))
        if self.cap is not None:
            budget = min(budget, self.cap)
        budget = max(MIN_BUDGET, budget)
        return self.base.model_copy(update={"window_budget_tokens": budget, "chars_per_token": self.chars_per_token})

    def observe(self, request: ModelRequest, input_tokens: int) -> None:
        """Correct the characters-per-token ratio from the input tokens the API counted."""
        if input_tokens <= 0:
            return
        chars = len(request.system) + len(json.dumps(request.tools)) + sum(map(turn_chars, request.turns))
        measured = min(max(chars / input_tokens, 1.0), 8.0)
        self.chars_per_token = round(0.7 * self.chars_per_token + 0.3 * measured, 3)

    def halve(self, window_tokens: int) -> None:
        """Cap the budget at half the window that did not fit (for the rest of the run)."""
        self.halvings = min(self.halvings + 1, MAX_HALVINGS)
        self.cap = max(MIN_BUDGET, window_tokens // 2)

    def shrinkable(self) -> bool:
        return self.halvings < MAX_HALVINGS
