"""Progress of a running call for the MCP client: the tool's own progress lines, and a heartbeat.

Engines load for many minutes and drafters train for hours, while clients give a tool call a limited
time; many count time since the last progress notification. While a call runs, each progress line
the tool prints (launch milestones, benchmark levels, training steps) and a heartbeat every
``HEARTBEAT_SECONDS`` go to the client as progress notifications, when the client asked for them (a
progress token); otherwise reporting does nothing. Progress is best effort: a client that has gone
away never fails the call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

HEARTBEAT_SECONDS = 10.0
# What reporting to a client that has gone away raises.
GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError, OSError)


class ProgressReporter:
    def __init__(self, session: ServerSession, tool: str) -> None:
        self.session, self.tool = session, tool
        self.count = 0
        self.started = time.monotonic()
        # Tools report from their own threads (not the server's worker threads): the way back to the loop.
        self.loop = anyio.lowlevel.current_token()

    async def report(self, message: str) -> None:
        self.count += 1
        with contextlib.suppress(*GONE):
            await self.session.report_progress(self.count, None, message)

    def from_tool(self, line: str) -> None:
        """The tool's progress callback (it runs in a worker thread)."""
        with contextlib.suppress(RuntimeError):  # the event loop is gone: the server is stopping
            anyio.from_thread.run(self.report, line, token=self.loop)

    async def heartbeat(self) -> None:
        while True:
            await anyio.sleep(HEARTBEAT_SECONDS)
            await self.report(f"{self.tool} still running ({time.monotonic() - self.started:.0f} s)")


async def run_reporting(session: ServerSession, tool: str, call: Callable[[Callable[[str], None]], Any]) -> Any:
    """Run ``call(progress)`` in a worker thread while progress goes to the client; returns its result."""
    reporter = ProgressReporter(session, tool)
    async with anyio.create_task_group() as group:
        group.start_soon(reporter.heartbeat)
        result = await anyio.to_thread.run_sync(call, reporter.from_tool)
        group.cancel_scope.cancel()
    return result
