"""A policy that plays a fixed list of decisions: for tests, demos and replaying a known run.

A script is a JSON or TOML file (or a Python list) of decisions; each decision is a list of actions,
each action one of ``{"tool": NAME, "arguments": {...}}``, ``{"ask": QUESTION, ...}``,
``{"finish": SUMMARY}`` or ``{"fail": REASON}`` (gives up: the run ends as failed). A decision may
also be written as a single action. Example (JSON)::

    {"decisions": [
        {"thought": "record the plan", "actions": [
            {"tool": "update_state", "arguments": {"tasks": [{"id": "t1", "title": "probe"}]}}]},
        {"tool": "probe_system"},
        {"finish": "probed the host"}],
     "when_done": "ask"}

Its position in the script is kept in the state document (``loop.policy_state``), which the loop
saves together with each decision, so a resumed run continues with the next decision and never
replays one. When the script runs out it asks the human (``when_done = "ask"``) or finishes.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent.actions import Action, Ask, Decision, Finish, ModelUsage, ToolCall
from agent.events import RunFailed, UsageError
from agent.policies.base import PolicyView


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ScriptedAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ask: str
    context: str = ""
    evidence: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)
    hypothesis: str = ""
    kind: str = "blocked"


class ScriptedFinish(BaseModel):
    model_config = ConfigDict(extra="forbid")
    finish: str


class ScriptedFail(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fail: str


ScriptedAction = ScriptedCall | ScriptedAsk | ScriptedFinish | ScriptedFail


_ACTION_KEYS = {"tool", "ask", "finish", "fail"}


class ScriptedDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thought: str = ""
    actions: list[ScriptedAction] = Field(default_factory=list)
    # Pretend model spending, so budgets can be exercised without a model.
    cost_usd: float = Field(default=0.0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _single_action(cls, data: Any) -> Any:
        if isinstance(data, dict) and "actions" not in data and _ACTION_KEYS & data.keys():
            return {"actions": [data]}
        return data


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decisions: list[ScriptedDecision]
    when_done: Literal["ask", "finish"] = "ask"


class ScriptedPolicy:
    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = script

    @classmethod
    def from_decisions(cls, decisions: list[Any], when_done: Literal["ask", "finish"] = "ask") -> ScriptedPolicy:
        return cls(Script.model_validate({"decisions": decisions, "when_done": when_done}))

    @classmethod
    def from_file(cls, path: Path) -> ScriptedPolicy:
        """Load a ``.json`` or ``.toml`` script; a bad file is a :class:`UsageError` naming it."""
        try:
            raw = path.read_bytes()
            data: Any = tomllib.loads(raw.decode()) if path.suffix == ".toml" else json.loads(raw)
        except OSError as error:
            raise UsageError(f"cannot read script {path}: {error.strerror or error}") from None
        except (ValueError, tomllib.TOMLDecodeError) as error:
            kind = "TOML" if path.suffix == ".toml" else "JSON"
            raise UsageError(f"script {path} is not valid {kind}: {error}") from None
        if isinstance(data, list):
            data = {"decisions": data}
        try:
            return cls(Script.model_validate(data))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(root)"
            raise UsageError(f"script {path} is invalid at {where}: {first['msg']}") from None

    def decide(self, view: PolicyView) -> Decision:
        memory = view.state.loop.policy_state.setdefault("scripted", {"position": 0})
        position = int(memory.get("position", 0))
        if position >= len(self.script.decisions):
            return self._exhausted(position)
        memory["position"] = position + 1
        planned = self.script.decisions[position]
        for item in planned.actions:
            if isinstance(item, ScriptedFail):
                raise RunFailed(item.fail)
        actions = [_action(item, f"d{position}-{index}") for index, item in enumerate(planned.actions)]
        usage = ModelUsage(
            cost_usd=planned.cost_usd, input_tokens=planned.input_tokens, output_tokens=planned.output_tokens
        )
        thought = planned.thought or f"scripted decision {position + 1}"
        return Decision(thought=thought, actions=actions, usage=usage)

    def _exhausted(self, position: int) -> Decision:
        if self.script.when_done == "finish":
            return Decision(thought="script finished", actions=[Finish(summary="the script ran to its end")])
        return Decision(
            thought="script exhausted",
            actions=[
                Ask(
                    question=f"The script's {position} decisions have all been played. What next?",
                    hypothesis="The scripted run did what it was written to do; anything more needs a human.",
                    options=["stop here", "resume with another policy"],
                    question_kind="blocked",
                )
            ],
        )


def _action(item: ScriptedAction, call_id: str) -> Action:
    if isinstance(item, ScriptedCall):
        return ToolCall(id=call_id, tool=item.tool, arguments=item.arguments)
    if isinstance(item, ScriptedAsk):
        return Ask(
            question=item.ask,
            context=item.context,
            evidence=item.evidence,
            options=item.options,
            hypothesis=item.hypothesis,
            question_kind=item.kind,
        )
    assert isinstance(item, ScriptedFinish)
    return Finish(summary=item.finish)
