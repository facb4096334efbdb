"""Model prices: ONE table, overridable from the configuration.

Prices are list prices in USD per million tokens as the providers published them in November 2026
(standard tier, short prompts); check them against the provider's price page and override them in the
configuration (``[llm.prices.<model>]``) when they change.

A name matches its table entry exactly or as a dated snapshot of it (``claude-sonnet-4-5-20250929``,
``gpt-5.5-2026-04-23``); a longer name is another model (``gpt-5`` does not price ``gpt-5.4-nano``). A
hosted model without a price is :data:`UNKNOWN`: its cost is counted as 0 but marked unknown, and a run
with an explicit cost limit refuses to start on it. A model on a local OpenAI-compatible server
(SGLang, vLLM, llama.cpp) is :data:`FREE` unless the configuration prices it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class ModelPrice(BaseModel):
    """USD per million tokens. Cache writes and reads default to the plain input price when unset."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    # One-hour cache writes (Anthropic bills them at twice the input price); unset: 2 x input.
    cache_write_1h: float | None = Field(default=None, ge=0)
    # True for a model the table does not price: its cost is not known (see the module docstring).
    unknown: bool = False


class TokenCounts(BaseModel):
    """What one model call consumed. ``input_tokens`` counts the whole prompt, cached parts included."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0  # the part of cache_write_tokens written with a one-hour lifetime


def _price(
    input_price: float, output_price: float, cache_write: float | None = None, cache_read: float | None = None
) -> ModelPrice:
    return ModelPrice(input=input_price, output=output_price, cache_write=cache_write, cache_read=cache_read)


PRICES: dict[str, ModelPrice] = {
    # Anthropic, standard tier; cache_write is the 5-minute kind, one-hour writes cost 2 x input.
    "claude-fable-5-1": _price(10.0, 50.0, 12.50, 0.25),
    "claude-fable-5": _price(10.0, 50.0, 12.50, 1.0),
    "claude-opus-5-5": _price(4.0, 20.0, 5.0, 0.20),
    "claude-opus-5": _price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-8": _price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-7": _price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-6": _price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-5": _price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": _price(15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": _price(15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-5-5": _price(2.0, 10.0, 2.50, 0.20),
    "claude-sonnet-5": _price(2.0, 10.0, 2.50, 0.20),
    "claude-sonnet-4-6": _price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-5": _price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4": _price(3.0, 15.0, 3.75, 0.30),
    # Haiku 5.5 is dearer above 100k prompt tokens; the table holds the short-prompt rate.
    "claude-haiku-5-5": _price(0.10, 0.50, 0.125, 0.01),
    "claude-haiku-4-5": _price(1.0, 5.0, 1.25, 0.10),
    # OpenAI, standard tier up to 272k input tokens (long prompts cost more); caching is automatic.
    "gpt-6-astra": _price(10.0, 50.0, 12.50, 1.0),
    "gpt-6.2-sol": _price(2.0, 10.0, 2.50, 0.20),
    "gpt-6.1-sol": _price(2.0, 10.0, 2.50, 0.20),
    "gpt-6-sol": _price(2.0, 10.0, 2.50, 0.20),
    "gpt-6-luna": _price(0.10, 0.50, 0.125, 0.01),
    "gpt-5.6-sol": _price(5.0, 30.0, None, 0.50),
    "gpt-5.6-terra": _price(2.0, 12.0, None, 0.20),
    "gpt-5.6-luna": _price(0.20, 1.20, None, 0.02),
    "gpt-5.5": _price(5.0, 30.0, None, 0.50),
    "gpt-5.4": _price(2.50, 15.0, None, 0.25),
    "gpt-5.4-mini": _price(0.75, 4.50, None, 0.075),
    "gpt-5": _price(1.25, 10.0, None, 0.125),
    "gpt-5-mini": _price(0.25, 2.0, None, 0.025),
    "gpt-4.1": _price(2.0, 8.0, None, 0.50),
    "gpt-4.1-mini": _price(0.40, 1.60, None, 0.10),
    "gpt-4o": _price(2.50, 10.0, None, 1.25),
    "gpt-4o-mini": _price(0.15, 0.60, None, 0.075),
}

FREE = ModelPrice(input=0.0, output=0.0)
UNKNOWN = ModelPrice(input=0.0, output=0.0, unknown=True)
_SNAPSHOT = re.compile(r"^(?P<family>.+?)-(\d{8}|\d{4}-\d{2}-\d{2})$")


def price_for(model: str, overrides: Mapping[str, ModelPrice] | None = None, *, local: bool = False) -> ModelPrice:
    """The price of ``model``: its own entry, else the entry of the model it is a dated snapshot of; else
    :data:`FREE` for a model on a local server (``local``) and :data:`UNKNOWN` for a hosted one."""
    table = {**PRICES, **(overrides or {})}
    if model in table:
        return table[model]
    snapshot = _SNAPSHOT.match(model)
    if snapshot is not None and snapshot["family"] in table:
        return table[snapshot["family"]]
    return FREE if local else UNKNOWN


def cost_usd(tokens: TokenCounts, price: ModelPrice) -> float:
    """Cost of one call; cached reads and cache writes are billed at their own rates."""
    cache_read = price.cache_read if price.cache_read is not None else price.input
    cache_write = price.cache_write if price.cache_write is not None else price.input
    hour_write = price.cache_write_1h if price.cache_write_1h is not None else 2 * price.input
    short_writes = max(tokens.cache_write_tokens - tokens.cache_write_1h_tokens, 0)
    plain_input = max(tokens.input_tokens - tokens.cache_read_tokens - tokens.cache_write_tokens, 0)
    total = (
        plain_input * price.input
        + tokens.cache_read_tokens * cache_read
        + short_writes * cache_write
        + tokens.cache_write_1h_tokens * hour_write
        + tokens.output_tokens * price.output
    )
    return total / 1_000_000
