"""Building the LLM policy from its settings (the ``[llm]`` section, validated when the configuration loads)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from agent.events import UsageError
from agent.policies.llm.anthropic_provider import AnthropicProvider
from agent.policies.llm.openai_provider import OpenAIProvider
from agent.policies.llm.policy import LlmPolicy
from agent.policies.llm.reply import Provider
from agent.policies.llm.settings import LlmSettings
from tools.redact import register_secret

# What a local OpenAI-compatible server gets when no key is configured (most of them ignore keys).
NO_KEY = "no-key-configured"


def api_key_for(settings: LlmSettings, environ: Mapping[str, str] | None = None) -> str:
    """The configured key, else the provider's environment variable; a local server may need none."""
    environ = os.environ if environ is None else environ
    configured = settings.api_key.get_secret_value() if settings.api_key is not None else None
    key = configured or environ.get(settings.api_key_variable)
    if key:
        register_secret(key)
        return key
    if settings.provider == "openai" and settings.base_url:
        return NO_KEY
    raise UsageError(
        f"the llm policy with provider {settings.provider} needs an API key: set "
        f"{settings.api_key_variable} (or llm.api_key in the config file)"
    )


def make_provider(settings: LlmSettings, environ: Mapping[str, str] | None = None) -> Provider:
    key = api_key_for(settings, environ)
    if settings.provider == "anthropic":
        return AnthropicProvider(settings, key)
    return OpenAIProvider(settings, key)


def build_llm_policy(
    settings: LlmSettings,
    *,
    on_retry: Callable[[int, float, str], None] | None = None,
    environ: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    cost_limited: bool = False,
) -> LlmPolicy:
    """The policy the wiring runs. Raises :class:`UsageError` when no API key is found, or when the model's
    price is unknown and the run has an explicit cost limit (``cost_limited``). ``environ`` replaces
    ``os.environ`` for the key lookup; ``sleep`` is how retry waits are spent."""
    policy = LlmPolicy(settings, make_provider(settings, environ), on_retry=on_retry, sleep=sleep)
    if policy.price.unknown and cost_limited:
        policy.close()
        raise UsageError(
            f"the price of model {policy.provider.model} is unknown, so a cost limit cannot be "
            f'kept: add [llm.prices."{policy.provider.model}"] (input and output in USD per '
            "million tokens) to the configuration, or run without --max-cost-usd"
        )
    return policy
