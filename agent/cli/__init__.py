"""The ``agent`` command line: thin commands that parse, build, run and map outcomes to exit codes.

Exit codes: 0 goal reached, 3 blocked and waiting for a human, 2 usage or configuration error (one
line, no traceback), 1 unexpected failure (the state is saved first).

Each command group lives in its own module under ``agent/cli/`` and registers itself on
:data:`agent.cli.app.app`; to add one, create the module and add one import line below.
"""

from __future__ import annotations

# Each import registers that module's commands on the app.
from agent.cli import ask as ask
from agent.cli import bench as bench
from agent.cli import config_cmd as config_cmd
from agent.cli import diagnose as diagnose
from agent.cli import mcp_cmd as mcp_cmd
from agent.cli import report_cmd as report_cmd
from agent.cli import resume as resume
from agent.cli import run as run
from agent.cli import status as status
from agent.cli import tools_cmd as tools_cmd
from agent.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app(prog_name="agent")
