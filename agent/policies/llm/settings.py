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

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=8, ge=1)
    max_total_seconds: float = Field(default=600.0, gt=0)
    initial_backoff_seconds: float = Field(default=1.0, ge=0)
    max_backoff_seconds: float = Field(default=60.0, ge=0)
    max_retry_after_seconds: float = Field(default=300.0, ge=0)


class ContextSettings(BaseModel):
    """Bounds on what is sent to the model each turn (token counts are estimates: characters / ratio).

    When the window of recent turns passes ``window_budget_tokens``, old tool outputs are pruned and
    then the oldest turns are folded into the state document's findings until the window is back under
    ``window_budget_tokens * low_water_fraction``. Compacting well below the budget means the prompt
    prefix stays the same for many turns, which keeps provider-side prompt caches useful.
    """

    model_config = ConfigDict(extra="forbid")

    window_budget_tokens: int = Field(default=60_000, ge=1_000)
    low_water_fraction: float = Field(default=0.6, gt=0.1, lt=1.0)
    state_document_max_tokens: int = Field(default=12_000, ge=500)
    keep_recent_turns: int = Field(default=6, ge=2)
    result_max_chars: int = Field(default=12_000, ge=500)
    pruned_result_keep_chars: int = Field(default=300, ge=0)
    chars_per_token: float = Field(default=3.5, gt=0)


class LlmSettings(BaseModel):
    """Everything the LLM policy needs. ``api_key`` falls back to ANTHROPIC_API_KEY / OPENAI_API_KEY."""

    model_config = ConfigDict(extra="forbid")

    provider: Provider = "anthropic"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    stream: bool = True
    request_timeout_seconds: float = Field(default=180.0, gt=0)
    # Unset: Anthropic gets ANTHROPIC_MAX_OUTPUT_TOKENS (the API requires a value; thinking counts against
    # it), OpenAI and compatible servers get none, so a local server allows what its context has room for.
    max_output_tokens: int | None = Field(default=None, ge=16)
    # Sent only when set: current Anthropic models reject non-default sampling parameters, and OpenAI's
    # reasoning models honour temperature only with reasoning turned off.
    temperature: float | None = None
    prompt_name: str = "system"
    retry: RetrySettings = Field(default_factory=RetrySettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    # Per-model price overrides (USD per million tokens), merged over the built-in table.
    prices: dict[str, ModelPrice] = Field(default_factory=dict)

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODELS[self.provider]

    @property
    def api_key_variable(self) -> str:
        return API_KEY_VARIABLES[self.provider]
