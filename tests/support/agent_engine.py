"""A real vLLM launched by the agent itself (``agent tool launch_engine``), and the agent's tools around it.

:func:`agent_tool` runs one tool through the real CLI on a state directory with the engine environment's
interpreter (``--engine-python``) and returns its result document; :class:`AgentEngine` is one engine the agent
started there. :func:`end_engines` ends every process group a state directory's engines left behind, the
group leader gone or not, touching only processes that carry the spawn's marker naming that engine's log and
the workers of groups made of those alone (see :mod:`support.process_groups`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import process_groups
from support.cli import agent_environment, run_agent
from support.real_engine import DEFAULT_ENGINE_ENVIRONMENT, RealEngine, free_port
from tools.processes import SPAWN_MARKER

LAUNCH_TIMEOUT_SECONDS = 900


def engine_config(engine: RealEngine, **fields: Any) -> dict[str, Any]:
    """A launch config for the tiny model on a free port, with the test environment's engine variables."""
    config: dict[str, Any] = {
        "engine": "vllm",
        "model_path": str(engine.model),
        "port": free_port(),
        "context_length": 1024,
        "env": dict(DEFAULT_ENGINE_ENVIRONMENT),
    }
    config.update(fields)
    return config


def agent_tool(
    engine: RealEngine, state_dir: Path, tool: str, arguments: dict[str, Any], timeout: float = 300.0
) -> dict[str, Any]:
    """The result document of one tool call (``ok``, ``output``, ``error``), whatever its exit code."""
    completed = run_agent(
        "tool",
        tool,
        "--state-dir",
        state_dir,
        "--engine-python",
        engine.python,
        "--json",
        "--args",
        json.dumps(arguments),
        environment=agent_environment(**DEFAULT_ENGINE_ENVIRONMENT),
        timeout=timeout,
    )
    try:
        document: dict[str, Any] = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"agent tool {tool} printed no JSON (exit {completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
        ) from None
    return document


@dataclass
class AgentEngine:
    """One engine the agent launched into ``state_dir`` (the launch_engine result in ``launch``)."""

    engine: RealEngine
    state_dir: Path
    name: str
    launch: dict[str, Any]

    @property
    def output(self) -> dict[str, Any]:
        output: dict[str, Any] = self.launch["output"]
        return output

    @property
    def base_url(self) -> str:
        return str(self.output["base_url"])

    @property
    def served_model(self) -> str:
        return str(self.engine.model)

    @property
    def log_path(self) -> Path:
        return Path(self.output["log_path"])

    @property
    def pid(self) -> int:
        return int(self.output["pid"])

    def tool(self, tool: str, arguments: dict[str, Any], timeout: float = 300.0) -> dict[str, Any]:
        return agent_tool(self.engine, self.state_dir, tool, arguments, timeout)

    def status(self) -> dict[str, Any]:
        document = self.tool("engine_status", {"name": self.name, "tail_lines": 0})
        assert document["ok"], document
        output: dict[str, Any] = document["output"]
        return output


def launch(engine: RealEngine, state_dir: Path, name: str, config: dict[str, Any]) -> AgentEngine:
    """``launch_engine`` to its outcome (ready, exited, ...); the caller checks it and ends it."""
    arguments = {
        "config": config,
        "name": name,
        "wait_timeout_seconds": LAUNCH_TIMEOUT_SECONDS,
        "poll_seconds": 1.0,
        "health_every_seconds": 2.0,
    }
    document = agent_tool(engine, state_dir, "launch_engine", arguments, timeout=LAUNCH_TIMEOUT_SECONDS + 120)
    return AgentEngine(engine, state_dir, name, document)


def launch_ready(engine: RealEngine, state_dir: Path, name: str, config: dict[str, Any]) -> AgentEngine:
    launched = launch(engine, state_dir, name, config)
    if not launched.launch["ok"] or launched.output["readiness"]["outcome"] != "ready":
        end_engines(state_dir)
        readiness = (launched.launch.get("output") or {}).get("readiness")
        raise AssertionError(f"{name} did not become ready: {launched.launch.get('error')} {readiness}")
    return launched


def _marked_by_engine(state_dir: Path) -> process_groups.Accept:
    """Accepts a member whose spawn marker names the log of the engine that leads its process group."""
    latest = state_dir / "latest.json"
    records = json.loads(latest.read_text(encoding="utf-8")).get("processes", []) if latest.exists() else []
    logs = {record["pid"]: record["log_path"] for record in records}

    def accept(group: int, environment: dict[str, str]) -> bool:
        mark = environment.get(SPAWN_MARKER)
        if group not in logs or mark is None:
            return False
        try:
            return bool(json.loads(mark).get("log") == logs[group])
        except (ValueError, AttributeError):
            return False

    return accept


def engine_groups(state_dir: Path) -> dict[int, list[int]]:
    """The pids of each engine's process group that the spawn started: marked members (the marker names that
    engine's log), and members whose title hides their environment (vLLM's workers) in a group of no one else."""
    found: dict[int, list[int]] = {}
    for member in process_groups.targets(_marked_by_engine(state_dir)):
        found.setdefault(member.group, []).append(member.pid)
    return found


def end_engines(state_dir: Path) -> None:
    """End what the state directory's engines left running (after the tests' own stop, if any): SIGTERM, SIGKILL
    after a few seconds."""
    process_groups.end(_marked_by_engine(state_dir))
