"""Approvals over MCP: the human answers a named question in the client, and only an explicit yes counts.

A tool that needs approval (the shell guard, a patch outside the write roots) has recorded an approval
question (options approve | deny). Where the client can show a form (form elicitation), the question is put to
its user: on the handshake-era protocol as an ``elicitation/create`` request during the call; on 2026-07-28,
where a server no longer sends requests of its own, inside an ``input_required`` result that the client
answers when it repeats the call (the question id travels as the request state and must still name the open
question). Only an accepted form whose decision is exactly ``approve`` approves; a decline, a cancel or any
other content denies. The verdict is recorded on that question as the word ``approve`` or ``deny``, and the
call then runs once or is refused with the reason. Where the client cannot show a form, or asking fails, the
call is refused with the reason and the question stays open for a person to answer with ``agent ask``.
"""

from __future__ import annotations

from typing import Literal

import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.elicitation import render_elicitation_schema
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError

from agent.mcp.calls import ApprovalRequired, McpCalls, Verdict
from agent.state import Question

APPROVAL_KEY = "approval"


class ApprovalForm(BaseModel):
    """The form the client shows: one explicit choice."""

    decision: Literal["approve", "deny"] = Field(description="approve runs this call once; deny refuses it")


def can_ask(context: ServerRequestContext[object]) -> bool:
    """Whether the client declared form elicitation (an empty ``elicitation`` object means forms, as in
    the 2025-06-18 revision)."""
    capabilities = context.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def message(question: Question) -> str:
    lines = [question.question, *(f"  {item}" for item in question.evidence)]
    return "\n".join([*lines, f"Approve once (question {question.id}), or deny?"])


def form_request(question: Question) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message(question), requested_schema=render_elicitation_schema(ApprovalForm)
        )
    )


def verdict(answer: types.ElicitResult) -> Verdict:
    """``approve`` only for an accepted form saying exactly that; everything else is ``deny``."""
    if answer.action == "accept" and answer.content == {"decision": "approve"}:
        return "approve"
    return "deny"


def waiting(needed: ApprovalRequired) -> types.InputRequiredResult:
    """The 2026-07-28 way to ask: the form rides the result, and the client repeats the call with the answer."""
    return types.InputRequiredResult(
        input_requests={APPROVAL_KEY: form_request(needed.question)}, request_state=needed.question.id
    )


def answer_from_retry(params: types.CallToolRequestParams, needed: ApprovalRequired) -> types.ElicitResult | None:
    """The client's answer when this repeated call carries one for the question still open, else None."""
    if params.request_state != needed.question.id or not params.input_responses:
        return None
    answer = params.input_responses.get(APPROVAL_KEY)
    return answer if isinstance(answer, types.ElicitResult) else None


async def ask(
    context: ServerRequestContext[object],
    params: types.CallToolRequestParams,
    calls: McpCalls,
    needed: ApprovalRequired,
) -> Verdict | types.InputRequiredResult | str:
    """Put the question to the client's user and record the verdict. Returns the verdict, the
    ``input_required`` result to send (2026-07-28, first round), or why nobody could be asked."""
    if not can_ask(context):
        return "this MCP client cannot ask its user (it declared no form elicitation)"
    if context.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answer = answer_from_retry(params, needed)
        if answer is None:
            return waiting(needed)
    else:
        try:
            answer = await context.session.elicit_form(
                message(needed.question),
                render_elicitation_schema(ApprovalForm),
                related_request_id=context.request_id,
            )
        except (MCPError, ValidationError) as error:
            return f"asking the MCP client's user failed ({error})"
    decided = verdict(answer)
    await anyio.to_thread.run_sync(calls.record_verdict, needed.question.id, decided, f"MCP form: {answer.action}")
    return decided
