"""The policy's own tools: ``ask_human`` (the only way to stop and ask) and ``finish`` (goal reached).

They are offered to the model next to the registry's tools but are never executed by the registry: a
valid call becomes an :class:`Ask` or a :class:`Finish` action; an invalid one becomes an error result
that tells the model what was wrong.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.actions import Ask, Finish
from agent.policies.llm.turns import ToolCallRecord

ASK_HUMAN = "ask_human"
FINISH = "finish"
POLICY_TOOLS = (ASK_HUMAN, FINISH)


class AskHumanArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="One clear question a busy operator can answer.")
    context: str = Field(default="", description="What you were doing and why you are blocked.")
    evidence: list[str] = Field(min_length=1, description="Log lines, command output, measurements.")
    options: list[str] = Field(default_factory=list, description="Concrete choices, best first, if any.")
    hypothesis: str = Field(min_length=1, description="Your best current explanation of the problem.")
    kind: Literal["blocked", "hardware", "unknown_failure", "decision", "access"] = "blocked"


class FinishArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        description="What was achieved, with the measured numbers, what "
        "is still open, and how to reproduce the final setup.",
    )


ASK_HUMAN_DESCRIPTION = (
    "Stop the run and ask the human operator. Use it ONLY when truly blocked: every reasonable next step "
    "needs information, access, hardware action or a decision that only a human can give. Always include "
    "the evidence you gathered and your best hypothesis. The run pauses until the operator answers; the "
    "answer comes back as this call's result. Call it alone, not together with other tools. Blocks: until the "
    "operator answers (the run pauses and resumes with the answer)."
)
# The same words close the system prompt (prompts/system.md, "Finishing"); a test keeps them equal.
FINISH_CRITERIA = (
    "Call `finish` only when the goal is met: the server is up and answers correctly (check_correctness "
    "passed after the last change), the benchmark numbers the goal asks for are measured and recorded in "
    "the state document, and the state document tells the story; or when the goal is proven impossible "
    "with evidence already shown."
)
FINISH_DESCRIPTION = (
    f"End the run. {FINISH_CRITERIA} Give a summary with the measured results, the exact launch "
    "configuration, what is still open and how to reproduce it. Call it alone, after you have seen the "
    "results of earlier calls. Blocks: no time (the run ends)."
)


@functools.cache
def _schemas() -> tuple[dict[str, Any], ...]:
    return tuple(
        {"name": name, "description": description, "input_schema": model.model_json_schema()}
        for name, description, model in (
            (ASK_HUMAN, ASK_HUMAN_DESCRIPTION, AskHumanArgs),
            (FINISH, FINISH_DESCRIPTION, FinishArgs),
        )
    )


def policy_tool_schemas() -> list[dict[str, Any]]:
    """Schemas of ``ask_human`` and ``finish``, in the registry's format (computed once)."""
    return [dict(schema) for schema in _schemas()]


def to_action(call: ToolCallRecord) -> Ask | Finish | str:
    """The action for a policy-tool call, or an error message for the model when the arguments are bad."""
    arguments: Any = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as error:
            return f"arguments for {call.name} are not valid JSON ({error}); send a JSON object."
    model = AskHumanArgs if call.name == ASK_HUMAN else FinishArgs
    try:
        parsed = model.model_validate(arguments)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}" for item in error.errors()
        )
        schema = json.dumps(model.model_json_schema())
        return f"invalid arguments for {call.name}: {problems}. Expected an object matching {schema}"
    if isinstance(parsed, AskHumanArgs):
        return Ask(
            question=parsed.question,
            context=parsed.context,
            evidence=parsed.evidence,
            options=parsed.options,
            hypothesis=parsed.hypothesis,
            question_kind=parsed.kind,
        )
    assert isinstance(parsed, FinishArgs)
    return Finish(summary=parsed.summary)
