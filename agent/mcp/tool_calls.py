"""The ops tools as MCP tools: their typed schemas listed, their calls run through :class:`McpCalls`.

Every tool of the registry is listed with its argument model's JSON schema as the input schema and
its output model's as the output schema; a successful call returns the output as structured content
(and as JSON text for clients that read only text). A tool's failure is an error result with the
tool's message, as the loop's policies see it. ``finish_run`` is the one tool of the server itself:
the client declares the goal met, and the run is done with its summary as the closing report.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.mcp import approval
from agent.mcp.calls import ApprovalRequired, CallOutcome, McpCalls
from agent.mcp.progress import run_reporting
from tools.base import ToolRegistry, ToolResult
from tools.redact import redact_text, redact_value

FINISH_TOOL = "finish_run"


class FinishRunArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        description="The closing report: what serves where, the configuration kept and why, the measured figures.",
    )


def tool_list(registry: ToolRegistry) -> list[types.Tool]:
    listed = [
        types.Tool(
            name=schema["name"],
            description=schema["description"],
            input_schema=schema["input_schema"],
            output_schema=tool.output_model.model_json_schema(),
        )
        for schema in registry.schemas()
        if (tool := registry.get(schema["name"])) is not None
    ]
    finish = types.Tool(
        name=FINISH_TOOL,
        description="Declare the goal met: the run's status becomes done and the summary its closing report "
        "(shown by `agent status` and `agent report`). Call it once, after the final configuration is "
        "serving and measured.",
        input_schema=FinishRunArgs.model_json_schema(),
    )
    return [*listed, finish]


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=redact_text(text))], is_error=True)


def to_mcp(result: ToolResult) -> types.CallToolResult:
    if not result.ok or result.output is None:
        return error_result(result.error or "the tool returned no result")
    output: dict[str, Any] = redact_value(result.output)
    text = json.dumps(output, ensure_ascii=False)
    if result.truncated:
        text += f"\n(long strings were cut; the full output is in {result.full_output_path})"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=output)


async def finish_run(calls: McpCalls, arguments: dict[str, Any]) -> types.CallToolResult:
    try:
        summary = FinishRunArgs.model_validate(arguments).summary
    except ValidationError as error:
        return error_result(f"invalid arguments for {FINISH_TOOL}: {error.errors()[0]['msg']}")
    await anyio.to_thread.run_sync(calls.finish, summary)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"run {calls.state.run_id} is done")],
    )


async def call_tool(
    context: ServerRequestContext[object], params: types.CallToolRequestParams, calls: McpCalls
) -> types.CallToolResult | types.InputRequiredResult:
    """One client call: run it; when it needs approval, ask (where the client can) and run it once if approved."""
    arguments = params.arguments or {}
    if params.name == FINISH_TOOL:
        return await finish_run(calls, arguments)
    outcome = await _execute(context, calls, params.name, arguments)
    if isinstance(outcome, ToolResult):
        return to_mcp(outcome)
    decided = await approval.ask(context, params, calls, outcome)
    if isinstance(decided, types.InputRequiredResult):
        return decided
    if decided != "approve":
        reason = "the user denied it" if decided == "deny" else decided
        return refusal(outcome, reason, calls)
    approved = await _execute(context, calls, params.name, arguments)
    if isinstance(approved, ApprovalRequired):
        return refusal(approved, "it still needs approval after the verdict", calls)
    return to_mcp(approved)


async def _execute(
    context: ServerRequestContext[object], calls: McpCalls, name: str, arguments: dict[str, Any]
) -> CallOutcome:
    outcome: CallOutcome = await run_reporting(
        context.session, name, lambda progress: calls.execute(name, arguments, progress)
    )
    return outcome


def refusal(needed: ApprovalRequired, reason: str, calls: McpCalls) -> types.CallToolResult:
    """Not run, and why; with the open question's id and how a person answers it, when it is still open."""
    lines = [f"Not run: {needed.reason}; {reason}.", *(f"  {item}" for item in needed.evidence)]
    if calls.pending_approval(needed.question.id) is not None:
        lines.append(
            f"Question {needed.question.id} waits in the state. A person approves it with "
            f"`agent ask --answer approve --id {needed.question.id} --state-dir {calls.store.state_dir}` "
            "once this server has stopped (it holds the state directory), and the same call then runs once."
        )
    return error_result("\n".join(lines))
