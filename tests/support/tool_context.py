"""A tool context on a real LocalHost (make_context), the paths of the small fakes (fake), and wait_for."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from agent.state import ProjectState
from tools.base import ToolContext, ToolSettings
from tools.hosts.local import LocalHost

FAKES = Path(__file__).resolve().parent / "fakes"


def fake(name: str) -> str:
    return str(FAKES / name)


def make_context(tmp_path: Path, host: LocalHost | None = None, **settings: float) -> ToolContext:
    state_dir = tmp_path / "state"
    state_dir.mkdir(exist_ok=True)
    return ToolContext(
        state=ProjectState(goal="test"),
        state_dir=state_dir,
        host=host or LocalHost(exit_dir=tmp_path / "exits"),
        settings=ToolSettings(engine_python=sys.executable, **settings),
    )  # type: ignore[arg-type]


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
