"""The LLM policy and agent the prompt-size benchmark drives: built the way the wiring builds the policy
(``build_llm_policy`` from an ``llm`` section), pointed at the loopback model server, with two tools:
``emit`` (returns the text it is given, a stand-in for a log read) and the real ``update_state``.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from pydantic import Field

from agent.loop import Agent
from agent.policies.llm.build import build_llm_policy
from agent.policies.llm.policy import LlmPolicy
from agent.policies.llm.settings import LlmSettings
from agent.state import ProjectState
from agent.store import StateStore
from tools.base import Tool, ToolArgs, ToolContext, ToolOutput, ToolRegistry, ToolSettings
from tools.hosts.local import LocalHost
from tools.update_state import UpdateStateTool
from twin.model_api.server import ModelServer

ProviderName = Literal["anthropic", "openai"]
KEYS = {"ANTHROPIC_API_KEY": "benchmark-key", "OPENAI_API_KEY": "benchmark-key"}


class EmitArgs(ToolArgs):
    text: str = Field(default="", description="Text to return.")
    repeat: int = Field(default=1, ge=1, le=10_000, description="How many times to repeat it.")


class EmitOutput(ToolOutput):
    text: str


class EmitTool(Tool[EmitArgs, EmitOutput]):
    name = "emit"
    description = "Return the given text, repeated."
    args_model = EmitArgs
    output_model = EmitOutput
    timeout_seconds = 5.0

    def run(self, args: EmitArgs, context: ToolContext) -> EmitOutput:
        return EmitOutput(text=args.text * args.repeat)


def make_policy(server: ModelServer, provider: ProviderName, stream: bool, **overrides: Any) -> LlmPolicy:
    """The LLM policy talking to ``server``; ``overrides`` replace keys of the ``llm`` section."""
    section: dict[str, Any] = {
        "provider": provider,
        "stream": stream,
        "base_url": server.anthropic_base_url if provider == "anthropic" else server.openai_base_url,
        **overrides,
    }
    return build_llm_policy(LlmSettings.model_validate(section), environ=KEYS)


def agent_for(policy: LlmPolicy, store: StateStore, state: ProjectState) -> Agent:
    context = ToolContext(
        state=state,
        state_dir=store.state_dir,
        host=LocalHost(exit_dir=store.state_dir / "exits"),
        settings=ToolSettings(engine_python=sys.executable, output_cap_chars=20_000),
        checkpoint=lambda: store.save(state),
    )
    return Agent(policy, ToolRegistry([EmitTool(), UpdateStateTool()]), context, store)
