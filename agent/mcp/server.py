"""The MCP server of ``agent mcp``: the ops tools, the state as resources, and the bring-up prompt.

Built on the SDK's low-level server, which serves both protocol eras (the initialize handshake of
2025-11-25 and earlier, and the per-request envelope of 2026-07-28); the handlers only translate
between MCP and :class:`agent.mcp.calls.McpCalls`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from agent.mcp.calls import McpCalls
from agent.mcp.prompt import PROMPT, get_prompt
from agent.mcp.resources import RESOURCES, read_resource
from agent.mcp.tool_calls import call_tool, tool_list

INSTRUCTIONS = (
    "opsloop's ops tools for bringing up and tuning inference engines (SGLang, vLLM) on the host: probe, "
    "launch/stop/status, tail and diagnose logs, patch and revert, benchmark, correctness, EAGLE-3 drafter "
    "training, and a guarded shell. Every call is recorded in the run's state document and journal; keep "
    "the document current with update_state and read it as the resource opsloop://state/latest.json. "
    "The prompt bring_up describes the proven method. Call finish_run when the goal is met."
)


def _version() -> str:
    try:
        return version("opsloop")
    except PackageNotFoundError:
        return "0"


def build_server(calls: McpCalls) -> Server[Any]:
    tools = tool_list(calls.registry)
    state_dir = calls.store.state_dir

    async def list_tools(
        context: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        context: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        return await call_tool(context, params, calls)

    async def list_resources(
        context: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def on_read_resource(
        context: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return read_resource(str(params.uri), state_dir)

    async def list_prompts(
        context: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[PROMPT])

    async def on_get_prompt(
        context: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return get_prompt(params.name, params.arguments)

    return Server(
        "opsloop",
        version=_version(),
        title="opsloop ops tools",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=list_resources,
        on_read_resource=on_read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=on_get_prompt,
    )
