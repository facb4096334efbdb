"""What the policy must know about a model family to build requests the API accepts.

Facts come from the installed SDKs (model names, parameters) and the providers' documentation:

- OpenAI refuses function tools on Chat Completions with a reasoning effort other than ``none`` for
  GPT-5.4 and later (GPT-5.5, GPT-5.6, GPT-6.x, the ``-pro`` and ``codex`` models): "Function tools with
  reasoning_effort are not supported for MODEL in /v1/chat/completions. To use function tools, use
  /v1/responses or set reasoning_effort to 'none'". Those models go to the Responses API.
- OpenAI reasoning models (o-series, GPT-5 and later, except ``-chat`` models) take
  ``max_completion_tokens`` and no ``temperature``/``top_p`` unless their effort is ``none``;
  ``gpt-6-astra`` and ``gpt-6.1-sol`` accept no effort ``none`` at all.
- Claude models from Opus 4.6 / Sonnet 4.6 on think adaptively; the 5.x models, Opus 4.7/4.8 and Mythos
  accept only adaptive thinking (``enabled`` and ``disabled`` get a 400); models with "preserved
  thinking" (Fable/Mythos 5.1 and later, Opus/Sonnet/Haiku 5.5) check each returned thinking block
  against everything before it (the prefix check).

A local OpenAI-compatible server (SGLang, vLLM) is described by what it reports (``/v1/models``), not by
this table; unknown names get a conservative profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

Wire = str  # "anthropic", "chat" or "responses"

_OPENAI_RESPONSES_ONLY = re.compile(r"^(gpt-5\.([4-9]|\d\d)|gpt-[6-9]|gpt-\d\d|o\d+-pro|gpt-5(\.\d+)?-(pro|codex))")
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-[5-9]|gpt-\d\d)")
_OPENAI_NO_EFFORT_NONE = re.compile(r"^(gpt-6(\.\d+)?-astra|gpt-6\.1-sol)")
_CLAUDE_ADAPTIVE_ONLY = re.compile(r"^claude-(fable|mythos|opus-5|sonnet-5|haiku-5|opus-4-[78])")
_CLAUDE_ADAPTIVE = re.compile(r"^claude-(fable|mythos|opus-5|sonnet-5|haiku-5|opus-4-[678]|sonnet-4-6)")
_CLAUDE_PRESERVED = re.compile(
    r"^claude-((fable|mythos)-5-([1-9]|\d\d)|(opus|sonnet|haiku)-5-([5-9]|\d\d)|(fable|mythos|opus|sonnet|haiku)-[6-9])"
)


@dataclass(frozen=True)
class ModelProfile:
    """How to talk to one model. ``context_window`` and ``max_output`` are tokens; 0 means unknown."""

    name: str
    reasoning: bool = False
    responses_for_tools: bool = False
    effort_none_allowed: bool = True
    adaptive_thinking: bool = False
    adaptive_only: bool = False
    preserved_thinking: bool = False
    context_window: int = 0
    max_output: int = 0


class ServerFacts(BaseModel):
    """What the API or server reported about the model (its Models endpoint); 0 means not reported."""

    context_window: int = Field(default=0, ge=0)
    max_output: int = Field(default=0, ge=0)
    thinking_types: list[str] = Field(default_factory=list)


def openai_profile(model: str) -> ModelProfile:
    name = model.rsplit("/", 1)[-1].lower()
    reasoning = bool(_OPENAI_REASONING.match(name)) and "-chat" not in name
    window, output = (
        (1_050_000, 128_000)
        if re.match(r"^gpt-(5\.[5-9]|[6-9])", name)
        else ((400_000, 128_000) if name.startswith("gpt-5") else (0, 0))
    )
    return ModelProfile(
        name=model,
        reasoning=reasoning,
        responses_for_tools=bool(_OPENAI_RESPONSES_ONLY.match(name)),
        effort_none_allowed=not _OPENAI_NO_EFFORT_NONE.match(name),
        context_window=window,
        max_output=output,
    )


def anthropic_profile(model: str) -> ModelProfile:
    name = model.lower()
    return ModelProfile(
        name=model,
        reasoning=True,
        adaptive_thinking=bool(_CLAUDE_ADAPTIVE.match(name)),
        adaptive_only=bool(_CLAUDE_ADAPTIVE_ONLY.match(name)),
        preserved_thinking=bool(_CLAUDE_PRESERVED.match(name)),
        context_window=200_000,
        max_output=32_000,
    )


def profile_for(provider: str, model: str) -> ModelProfile:
    return anthropic_profile(model) if provider == "anthropic" else openai_profile(model)


def is_official_openai(base_url: str | None) -> bool:
    """True for OpenAI's own endpoint (no base URL, or its API host); False for a compatible server."""
    return base_url is None or "api.openai.com" in base_url


def choose_wire(provider: str, model: str, base_url: str | None, forced: str) -> Wire:
    """``anthropic`` for Anthropic; for OpenAI the forced wire (``chat``/``responses``), else Responses for
    the OpenAI models that take tools only there (on OpenAI's endpoint or a gateway that serves them),
    else Chat Completions, which every OpenAI-compatible server (SGLang, vLLM, llama.cpp) speaks."""
    if provider == "anthropic":
        return "anthropic"
    if forced in ("chat", "responses"):
        return forced
    return "responses" if openai_profile(model).responses_for_tools else "chat"
