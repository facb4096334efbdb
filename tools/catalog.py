"""The default tool set. Each ops-tool module contributes its tools here."""

from __future__ import annotations

from tools.base import AnyTool, ToolRegistry
from tools.update_state import UpdateStateTool
from tools.wait import WaitTool


def default_tools() -> list[AnyTool]:
    tools: list[AnyTool] = []
    tools.append(UpdateStateTool())
    tools.append(WaitTool())
    return tools


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_tools())
