"""Building the LLM policy from the agent configuration (its ``llm`` section) or from :class:`LlmSettings`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from agent.events import UsageError
from agent.policies.llm.anthropic_provider import AnthropicProvider
from agent.policies.llm.openai_provider import OpenAIProvider
from agent.policies.llm.policy import LlmPolicy
from agent.policies.llm.reply import Provider
from agent.policies.llm.settings import LlmSettings
from tools.redact import register_secret

# What a local OpenAI-compatible server gets when no key is configured (most of them ignore keys).
NO_KEY = "no-key-configured"


def settings_from(config: Any) -> LlmSettings:
    """``LlmSettings`` from an :class:`LlmSettings`, a mapping, or a config object with an ``llm`` section."""
    if isinstance(config, LlmSettings):
        return config
    section = config if isinstance(config, Mapping) else getattr(config, "llm", None)
    if isinstance(section, LlmSettings):
        return section
    try:
        return LlmSettings.model_validate(dict(section or {}))
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise UsageError(f"invalid configuration: llm.{location}: {first['msg']}") from None


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
    raise UsageError(f"the llm policy with provider {settings.provider} needs an API key: set "
                     f"{settings.api_key_variable} (or llm.api_key in the config file)")


def make_provider(settings: LlmSettings, environ: Mapping[str, str] | None = None) -> Provider:
    key = api_key_for(settings, environ)
    if settings.provider == "anthropic":
        return AnthropicProvider(settings, key)
    return OpenAIProvider(settings, key)


def build_llm_policy(config: Any, *, on_retry: Callable[[int, float, str], None] | None = None,
                     environ: Mapping[str, str] | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> LlmPolicy:
    """The policy the wiring runs. Raises :class:`UsageError` for a bad ``llm`` section or a missing key.
    ``environ`` replaces ``os.environ`` for the key lookup; ``sleep`` is how retry waits are spent."""
    settings = settings_from(config)
    return LlmPolicy(settings, make_provider(settings, environ), on_retry=on_retry, sleep=sleep)
