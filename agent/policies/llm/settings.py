"""Typed settings for the LLM policy: which provider and model, how to retry, how big the context may grow.

The agent configuration builds one :class:`LlmSettings`; every field has a working default so that
``LlmSettings(provider="anthropic")`` is a complete configuration (the API key then comes from the
provider's usual environment variable).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agent.policies.llm.pricing import ModelPrice

Provider = Literal["anthropic", "openai"]
WireChoice = Literal["auto", "chat", "responses"]
# auto: the model's default (current Claude models think adaptively; nothing is sent); adaptive / enabled /
# between_tools / disabled: Anthropic's thinking types (enabled needs thinking_budget_tokens); on / off:
# OpenAI-compatible servers, through ``chat_template_kwargs`` (enable_thinking / thinking).
ThinkingMode = Literal["auto", "adaptive", "enabled", "between_tools", "disabled", "on", "off"]
Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
CacheTtl = Literal["5m", "1h"]

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-6-sol"}
API_KEY_VARIABLES: dict[str, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
ANTHROPIC_MAX_OUTPUT_TOKENS = 32_000


class RetrySettings(BaseModel):
    """Retries for transient API failures (429, 5xx, 529, timeouts, dropped connections).

    Waits grow exponentially from ``initial_backoff_seconds`` up to ``max_backoff_seconds`` with full
    jitter; a server's ``retry-after``/``retry-after-ms`` header replaces the computed wait (capped at
    ``max_retry_after_seconds``). Retrying stops after ``max_attempts`` calls or once the next wait would
    pass ``max_total_seconds`` since the first attempt, whichever comes first.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_attempts: int = Field(default=8, ge=1)
    """Calls per model request, the first included."""
    max_total_seconds: float = Field(default=600.0, gt=0)
    """No retry starts later than this after the first attempt."""
    initial_backoff_seconds: float = Field(default=1.0, ge=0)
    """First computed wait; it doubles per retry (with full jitter)."""
    max_backoff_seconds: float = Field(default=60.0, ge=0)
    """Longest computed wait."""
    max_retry_after_seconds: float = Field(default=300.0, ge=0)
    """Longest wait a server's retry-after header may ask for."""


class ContextSettings(BaseModel):
    """Bounds on what is sent to the model each turn (token counts are estimates: characters / ratio).

    When the window of recent turns passes ``window_budget_tokens``, old tool outputs are pruned and
    then the oldest turns are folded into the state document's findings until the window is back under
    ``window_budget_tokens * low_water_fraction``. Compacting well below the budget means the prompt
    prefix stays the same for many turns, which keeps provider-side prompt caches useful.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    window_budget_tokens: int = Field(default=60_000, ge=1_000)
    """Estimated tokens of recent turns that trigger compaction: an upper bound, since the budget in force
    also fits the model's real context window (see ``agent/policies/llm/budget.py``)."""
    context_window_tokens: int | None = Field(default=None, ge=4_000)
    """The model's context window in tokens; unset: what the API or server reports, else the model
    family's."""
    low_water_fraction: float = Field(default=0.6, gt=0.1, lt=1.0)
    """Compaction goes down to this fraction of the budget."""
    state_document_max_tokens: int = Field(default=12_000, ge=500)
    """Estimated tokens of the state document sent each turn (longer lists are cut)."""
    keep_recent_turns: int = Field(default=6, ge=2)
    """Turns never folded away."""
    result_max_chars: int = Field(default=12_000, ge=500)
    """Longest tool result sent to the model."""
    pruned_result_keep_chars: int = Field(default=300, ge=0)
    """What is left of an old tool result once pruned."""
    chars_per_token: float = Field(default=3.5, gt=0)
    """Characters per token for the estimates."""


class LlmSettings(BaseModel):
    """Everything the LLM policy needs. ``api_key`` falls back to ANTHROPIC_API_KEY / OPENAI_API_KEY."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: Provider = "anthropic"
    """``anthropic`` or ``openai`` (also any OpenAI-compatible server, with ``base_url``)."""
    model: str | None = None
    """Model name; unset: the provider's default model."""
    base_url: str | None = None
    """Server URL; unset: the provider's own API."""
    api_key: SecretStr | None = None
    """API key; unset: ANTHROPIC_API_KEY or OPENAI_API_KEY (a local server may need none)."""
    stream: bool = True
    """Stream responses (server-sent events)."""
    request_timeout_seconds: float = Field(default=180.0, gt=0)
    """Limit for one model call."""
    max_output_tokens: int | None = Field(default=None, ge=16)
    """Unset: Anthropic gets ANTHROPIC_MAX_OUTPUT_TOKENS (the API requires a value; thinking counts
    against it), OpenAI and compatible servers get none, so a local server allows what its context
    has room for."""
    temperature: float | None = None
    """Sent only when set: current Anthropic models reject non-default sampling parameters, and OpenAI's
    reasoning models honour temperature only with reasoning turned off."""
    prompt_name: str = "system"
    """The system prompt, by name (``prompts/<name>.md``)."""
    wire: WireChoice = "auto"
    """OpenAI API: ``chat``, ``responses``, or ``auto``: Responses for the OpenAI models that take tools
    only there (GPT-5.4 and later), else Chat Completions (every OpenAI-compatible server)."""
    thinking: ThinkingMode = "auto"
    """Anthropic's thinking type (``auto``: adaptive thinking with readable output on models that think
    adaptively, else the model's default); ``on``/``off`` switch a compatible server's chat template."""
    thinking_budget_tokens: int = Field(default=8_000, ge=1_024)
    """Thinking budget for ``thinking = "enabled"``."""
    thinking_display: Literal["summarized", "omitted"] = "summarized"
    """Readable thinking in replies (Anthropic): what the transcript and the decision's thought record."""
    effort: Effort | None = None
    """Reasoning effort (Anthropic ``output_config.effort``, OpenAI ``reasoning.effort``); unset: the
    model's default."""
    reasoning_model: bool | None = None
    """Whether the model reasons (``max_completion_tokens``, no temperature unless the effort is
    ``none``); unset: from the model family."""
    cache_ttl: CacheTtl = "1h"
    """Lifetime of the cache breakpoint on tools and system prompt (Anthropic): launch_engine can block
    30 minutes and run_bench an hour, longer than the 5-minute default."""
    retry: RetrySettings = Field(default_factory=RetrySettings)
    """Retries of transient API failures."""
    context: ContextSettings = Field(default_factory=ContextSettings)
    """Bounds on what is sent each turn."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Per-model price overrides (USD per million tokens), merged over the built-in table."""

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODELS[self.provider]

    @property
    def api_key_variable(self) -> str:
        return API_KEY_VARIABLES[self.provider]
