"""The default tool set. Adding a tool: import it and add it to the list."""

from __future__ import annotations

from tools.base import AnyTool, ToolRegistry
from tools.bench.tools import CheckCorrectnessTool, CheckLosslessTool, RunBenchTool
from tools.cluster.preflight import CheckNodesTool
from tools.deploy.tools import LaunchDeploymentTool, RenderDeploymentTool
from tools.drafter.tools import DrafterStatusTool, TrainDrafterTool
from tools.engines.control import EngineStatusTool, StopEngineTool
from tools.engines.launch import LaunchEngineTool
from tools.kernel_log import ReadKernelLogTool
from tools.logs.diagnose_tool import DiagnoseLogTool
from tools.logs.tail_tool import TailLogTool
from tools.patch.tools import PatchFileTool, RevertPatchTool
from tools.probe import ProbeSystemTool
from tools.shell.tool import ShellTool
from tools.update_state import UpdateStateTool
from tools.wait import WaitTool


def default_tools() -> list[AnyTool]:
    return [
        UpdateStateTool(),
        WaitTool(),
        ProbeSystemTool(),
        CheckNodesTool(),
        ReadKernelLogTool(),
        LaunchEngineTool(),
        StopEngineTool(),
        EngineStatusTool(),
        TailLogTool(),
        DiagnoseLogTool(),
        PatchFileTool(),
        RevertPatchTool(),
        RunBenchTool(),
        CheckCorrectnessTool(),
        CheckLosslessTool(),
        ShellTool(),
        TrainDrafterTool(),
        DrafterStatusTool(),
        RenderDeploymentTool(),
        LaunchDeploymentTool(),
    ]


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_tools())
