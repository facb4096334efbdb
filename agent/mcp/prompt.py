"""The prompt "bring up <model> with <engine>": primes the client with the method of the runbook policy.

The text (``prompts/bring_up.md``) follows ``agent/policies/runbook/`` step by step (plan, launch, one
remedy at a time, the correctness probe, the baseline, the drafters, the choice, the report); the
numbers quoted are the runbook's defaults (``RunbookSettings``) and the engines' default ports.
"""

from __future__ import annotations

import mcp.types as types
from mcp.shared.exceptions import MCPError

from agent.policies.runbook.settings import RunbookSettings
from prompts import load_prompt
from tools.engines.config import DEFAULT_PORTS

PROMPT_NAME = "bring_up"
ENGINES = tuple(DEFAULT_PORTS)

PROMPT = types.Prompt(
    name=PROMPT_NAME,
    title="Bring up <model> with <engine>",
    description="Bring up a model on an inference engine the way the opsloop runbook does, through the ops tools.",
    arguments=[
        types.PromptArgument(name="model", description="The model to serve (name or path).", required=True),
        types.PromptArgument(
            name="engine", description=f"One of {', '.join(ENGINES)} (default sglang).", required=False
        ),
    ],
)


def method(model: str, engine: str) -> str:
    settings = RunbookSettings()
    return load_prompt(PROMPT_NAME).format(
        model=model,
        engine=engine,
        port=DEFAULT_PORTS[engine],
        max_attempts=settings.max_attempts,
        peak_concurrency=settings.peak_concurrency,
        gain=settings.speculative_gain_needed,
    )


def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    """The prompt's messages; an unknown prompt, a missing model or an unknown engine is an invalid request."""
    given = arguments or {}
    model, engine = given.get("model", "").strip(), (given.get("engine") or "sglang").strip().lower()
    if name != PROMPT_NAME:
        raise MCPError(types.INVALID_PARAMS, f"unknown prompt {name!r}; the prompt is {PROMPT_NAME!r}")
    if not model:
        raise MCPError(types.INVALID_PARAMS, "the prompt needs the argument model")
    if engine not in ENGINES:
        raise MCPError(types.INVALID_PARAMS, f"unknown engine {engine!r}; choose {' or '.join(ENGINES)}")
    return types.GetPromptResult(
        description=f"Bring up {model} with {engine}",
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=method(model, engine)))],
    )
