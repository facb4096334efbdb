"""The default tool set. Each ops-tool module contributes its tools here."""

from __future__ import annotations

from tools.base import AnyTool, ToolRegistry


def default_tools() -> list[AnyTool]:
    tools: list[AnyTool] = []
    return tools


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_tools())
