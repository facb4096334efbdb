"""``agent mcp``: the ops tools as an MCP server for coding agents (Claude Code, opencode, Codex...).

It works on a state directory like every other command and holds its lock while it serves, so a
second agent there is refused; every call is journaled and saved, so ``agent status`` and ``agent
resume`` see what the client did. Exit codes: 0 the client went away (stdio) or the server was
stopped, 2 usage error (locked directory, bad address, missing token).
"""

from __future__ import annotations

import os
from typing import Annotated

import anyio
import typer

from agent.cli.app import app
from agent.cli.common import ConfigOption, SimOption, StateDirOption, locate, progress, scenario_argument, usage_errors
from agent.config import load_config
from agent.wiring import tool_session
from tools.catalog import default_registry

MCP_GOAL = "work done through the MCP server"

HttpOption = Annotated[
    str | None,
    typer.Option(
        "--http",
        metavar="HOST:PORT",
        help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio. A non-loopback HOST needs a "
        "bearer token in OPSLOOP_MCP_TOKEN.",
    ),
]
GoalOption = Annotated[str, typer.Option("--goal", help="The goal of a state created here (when none exists).")]


@app.command("mcp")
def mcp(
    state_dir: StateDirOption = None,
    sim: SimOption = None,
    config: ConfigOption = None,
    http: HttpOption = None,
    goal: GoalOption = MCP_GOAL,
) -> None:
    """Serve the ops tools over MCP (stdio by default), recording every call in the state directory."""
    from agent.mcp.calls import McpCalls
    from agent.mcp.server import build_server
    from agent.mcp.transport import TOKEN_VARIABLE, check_token, listen, parse_address, serve_http, serve_stdio

    with usage_errors():
        address = parse_address(http) if http is not None else None
        token = os.environ.get(TOKEN_VARIABLE) or None
        if address is not None:
            check_token(address, token)
        directory, _ = locate(None, state_dir)
        settings = load_config(directory, config.absolute() if config is not None else None)
        with tool_session(directory, settings, goal=goal, sim=scenario_argument(sim), progress=progress) as session:
            session.state.policy = "mcp"
            session.store.save(session.state)
            calls = McpCalls(session.store, session.state, session.context, default_registry())
            server = build_server(calls)
            if address is None:
                progress(f"serving MCP on stdio; state in {directory}")
                anyio.run(serve_stdio, server)
                return
            listener = listen(address)
            progress(f"serving MCP at {address.url}; state in {directory}")
            anyio.run(serve_http, server, listener, address, token)
