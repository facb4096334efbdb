"""Putting a run together: config -> host -> tool settings -> tool context -> registry -> policy -> agent.

Optional parts (the runbook and LLM policies, the simulated host, process reconciliation) are
imported only when chosen, so a missing one is a clear usage error rather than an import failure at
start-up, and the CLI stays quick.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from agent.config import AgentConfig
from agent.events import UsageError
from agent.loop import Agent, ExitHandler
from agent.policies.base import Policy
from agent.state import ProjectState
from agent.store import StateStore
from agent.stuck import StuckDetector
from tools.base import ToolContext, ToolRegistry, ToolSettings
from tools.catalog import default_registry
from tools.hosts.base import Host

Progress = Callable[[str], None]


def optional_module(name: str, purpose: str) -> ModuleType:
    """Import a module that may not be installed; its absence is a usage error naming ``purpose``."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and (name == error.name or name.startswith(error.name + ".")):
            raise UsageError(f"{purpose} is not available in this installation "
                             f"(module {name} is missing)") from None
        raise


def build_host(state: ProjectState, state_dir: Path) -> Host:
    """The simulated host when the run was started with ``--sim``, else the local machine."""
    scenario = state.run.simulated_scenario
    if scenario:
        module = optional_module("tools.hosts.sim.host", "the simulated host (--sim)")
        try:
            host: Host = module.SimHost.from_scenario(scenario, state_dir)
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot load simulation scenario {scenario!r}: {error}") from None
        return host
    from tools.hosts.local import LocalHost

    return LocalHost()


def build_tool_settings(config: AgentConfig, time_scale: float = 1.0) -> ToolSettings:
    """Tool settings from the config; waiting thresholds follow the host's clock (see Host.time_scale)."""
    tools = config.tools
    roots = [Path.cwd(), *(Path(root).expanduser() for root in tools.allowed_write_roots)]
    return ToolSettings(engine_python=tools.engine_python or sys.executable, allowed_write_roots=roots,
                        output_cap_chars=tools.output_cap_chars,
                        load_timeout_seconds=max(tools.load_timeout_seconds / time_scale, 30.0),
                        hang_after_seconds=max(tools.hang_after_seconds / time_scale, 3.0))


def build_policy(name: str, config: AgentConfig, progress: Progress) -> Policy:
    if name == "scripted":
        from agent.policies.scripted import ScriptedPolicy

        if not config.script:
            raise UsageError("the scripted policy needs a decisions file: --script FILE")
        return ScriptedPolicy.from_file(Path(config.script))
    if name == "runbook":
        module = optional_module("agent.policies.runbook", "the runbook policy")
        builder = getattr(module, "build_runbook_policy", None)  # takes the config when the module has one
        policy: Policy = builder(config) if builder is not None else module.RunbookPolicy()
        return policy
    if name == "llm":
        module = optional_module("agent.policies.llm", "the LLM policy")

        def on_retry(attempt: int, wait_seconds: float, reason: str) -> None:
            progress(f"model call failed ({reason}); retry {attempt} in {wait_seconds:.1f} s")

        policy = module.build_llm_policy(config, on_retry=on_retry)
        return policy
    raise UsageError(f"unknown policy {name!r}; choose runbook, scripted or llm")


def reconcile(state: ProjectState, host: Host, progress: Progress) -> None:
    """On resume: re-adopt processes whose (pid, create_time) still match, mark the rest exited."""
    try:
        module = importlib.import_module("tools.processes")
    except ModuleNotFoundError as error:
        if error.name in ("tools", "tools.processes"):
            return
        raise
    for note in module.reconcile_processes(state, host):
        progress(note)


def build_agent(state: ProjectState, store: StateStore, config: AgentConfig, progress: Progress,
                on_exit: ExitHandler, registry: ToolRegistry | None = None,
                host: Host | None = None) -> Agent:
    """Everything a run needs, from the state (which records the policy and host) and the config."""
    host = host or build_host(state, store.state_dir)
    policy = build_policy(state.run.policy or "runbook", config, progress)
    context = ToolContext(state=state, state_dir=store.state_dir, host=host,
                          settings=build_tool_settings(config, host.time_scale),
                          checkpoint=lambda: store.save(state), progress=progress)
    stuck = StuckDetector(repeat_limit=config.stuck.repeat_limit, idle_limit=config.stuck.idle_limit)
    return Agent(policy, registry or default_registry(), context, store, on_exit=on_exit, progress=progress,
                 stuck=stuck)


def describe_environment() -> dict[str, Any]:
    """What started this agent, for the journal's ``start`` record (never environment values)."""
    return {"pid": os.getpid(), "python": sys.executable, "cwd": str(Path.cwd())}
