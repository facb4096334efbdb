"""Building blocks for tests that drive the LLM policy against the loopback model server.

Everything here is real: the policy is built the way the wiring builds it (``build_llm_policy``), the
official SDKs talk HTTP to :class:`~twin.model_api.server.ModelServer`, tools run through a real
:class:`~tools.base.ToolRegistry`. Retry waits are made tiny through the settings, not by patching.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agent.actions import Observation, ToolCall
from agent.loop import Agent
from agent.policies.base import PolicyView
from agent.policies.llm.build import build_llm_policy
from agent.policies.llm.policy import LlmPolicy
from agent.policies.llm.settings import LlmSettings
from agent.state import ProjectState, Question
from agent.store import StateStore
from tools.base import Tool, ToolArgs, ToolContext, ToolOutput, ToolRegistry, ToolSettings
from tools.hosts.local import LocalHost
from tools.update_state import UpdateStateTool
from twin.model_api.server import ModelServer

# The three wires: "anthropic" (Messages API), "openai" (a hosted OpenAI model: the Responses API),
# "chat" (an OpenAI-compatible server such as SGLang or vLLM: Chat Completions).
ProviderName = Literal["anthropic", "openai", "chat"]
MODES: list[tuple[ProviderName, bool]] = [
    ("anthropic", False),
    ("anthropic", True),
    ("openai", False),
    ("openai", True),
    ("chat", False),
    ("chat", True),
]
MODE_IDS = ["anthropic-json", "anthropic-sse", "responses-json", "responses-sse", "chat-json", "chat-sse"]
TEST_KEYS = {"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}
LOCAL_MODEL = "Qwen/Qwen3-235B-A22B"


def llm_section(server: ModelServer, provider: ProviderName, stream: bool, **overrides: Any) -> dict[str, Any]:
    """An ``llm`` configuration section pointing at the server, with millisecond retry waits."""
    section: dict[str, Any] = {
        "provider": "anthropic" if provider == "anthropic" else "openai",
        "base_url": server.anthropic_base_url if provider == "anthropic" else server.openai_base_url,
        "stream": stream,
        "request_timeout_seconds": 2.0,
        "retry": {
            "max_attempts": 4,
            "max_total_seconds": 10.0,
            "initial_backoff_seconds": 0.002,
            "max_backoff_seconds": 0.01,
        },
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(section.get(key), dict):
            section[key] = {**section[key], **value}
        else:
            section[key] = value
    if provider == "chat":
        section.setdefault("model", LOCAL_MODEL)
    return section


class SleepRecorder:
    """Passed as the policy's ``sleep``: records each requested wait, then really waits (briefly)."""

    def __init__(self, cap_seconds: float = 0.05) -> None:
        self.waits: list[float] = []
        self.cap_seconds = cap_seconds

    def __call__(self, seconds: float) -> None:
        import time

        self.waits.append(seconds)
        time.sleep(min(seconds, self.cap_seconds))


def make_policy(
    server: ModelServer, provider: ProviderName, stream: bool, sleep: SleepRecorder | None = None, **overrides: Any
) -> LlmPolicy:
    section = llm_section(server, provider, stream, **overrides)
    return build_llm_policy(LlmSettings.model_validate(section), environ=TEST_KEYS, sleep=sleep or SleepRecorder())


class EmitArgs(ToolArgs):
    text: str = Field(default="", description="Text to return.")
    repeat: int = Field(default=1, ge=1, le=10_000, description="How many times to repeat it.")


class EmitOutput(ToolOutput):
    text: str


class EmitTool(Tool[EmitArgs, EmitOutput]):
    """A test tool that returns the text it is given (repeated): a stand-in for a log read."""

    name = "emit"
    description = "Return the given text, repeated."
    args_model = EmitArgs
    output_model = EmitOutput
    timeout_seconds = 5.0

    def run(self, args: EmitArgs, context: ToolContext) -> EmitOutput:
        return EmitOutput(text=args.text * args.repeat)


def registry() -> ToolRegistry:
    return ToolRegistry([EmitTool(), UpdateStateTool()])


@functools.cache
def _default_schemas() -> tuple[dict[str, Any], ...]:
    return tuple(registry().schemas())


def context_for(state: ProjectState, state_dir: Path, store: StateStore | None = None) -> ToolContext:
    return ToolContext(
        state=state,
        state_dir=state_dir,
        host=LocalHost(exit_dir=state_dir / "exits"),
        settings=ToolSettings(engine_python=sys.executable, output_cap_chars=20_000),
        checkpoint=(lambda: store.save(state)) if store is not None else (lambda: None),
    )


def view(
    state: ProjectState,
    state_dir: Path,
    tools: ToolRegistry | None = None,
    observations: list[Observation] | None = None,
    answers: list[Question] | None = None,
    nudge: str | None = None,
) -> PolicyView:
    schemas = tools.schemas() if tools is not None else list(_default_schemas())
    return PolicyView(
        state=state,
        state_dir=state_dir,
        tool_schemas=schemas,
        observations=list(observations or []),
        new_answers=list(answers or []),
        nudge=nudge,
    )


def execute(
    calls: list[ToolCall], state: ProjectState, state_dir: Path, tools: ToolRegistry | None = None
) -> list[Observation]:
    """Run tool calls through a real registry, as the loop does, and return their observations."""
    tools = tools or registry()
    context = context_for(state, state_dir)
    return [
        Observation(
            call_id=call.id,
            tool=call.tool,
            arguments=call.arguments,
            result=tools.execute(call.tool, call.arguments, context),
        )
        for call in calls
    ]


def agent_for(policy: LlmPolicy, store: StateStore, state: ProjectState, tools: ToolRegistry | None = None) -> Agent:
    return Agent(policy, tools or registry(), context_for(state, store.state_dir, store), store)
