"""The default tool set. Each ops-tool module contributes its tools here."""

from __future__ import annotations

from tools.base import AnyTool, ToolRegistry
from tools.bench.tools import CheckCorrectnessTool, RunBenchTool
from tools.drafter.tools import DrafterStatusTool, TrainDrafterTool
from tools.engines.control import EngineStatusTool, StopEngineTool
from tools.engines.launch import LaunchEngineTool
from tools.logs.diagnose_tool import DiagnoseLogTool
from tools.logs.tail_tool import TailLogTool
from tools.patch.tools import PatchFileTool, RevertPatchTool
from tools.probe import ProbeSystemTool
from tools.shell.tool import ShellTool
from tools.update_state import UpdateStateTool
from tools.wait import WaitTool


def default_tools() -> list[AnyTool]:
    tools: list[AnyTool] = []
    tools.append(UpdateStateTool())
    tools.append(WaitTool())
    tools.append(ProbeSystemTool())
    tools.append(LaunchEngineTool())
    tools.append(StopEngineTool())
    tools.append(EngineStatusTool())
    tools.append(TailLogTool())
    tools.append(DiagnoseLogTool())
    tools.append(PatchFileTool())
    tools.append(RevertPatchTool())
    tools.append(RunBenchTool())
    tools.append(CheckCorrectnessTool())
    tools.append(ShellTool())
    tools.append(TrainDrafterTool())
    tools.append(DrafterStatusTool())
    return tools


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_tools())
