"""Putting a run together: config -> host -> tool settings -> tool context -> registry -> policy -> agent.

The policies and the simulated host are imported only when chosen, so the CLI starts quickly (the LLM
policy loads the model SDKs).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.events import UsageError
from agent.host_set import build_hosts, close_hosts
from agent.lock import StateDirectoryLock
from agent.loop import Agent, ExitHandler
from agent.policies.base import Policy
from agent.settings import AgentConfig
from agent.state import ProjectState
from agent.store import StateStore
from agent.stuck import StuckDetector
from tools.base import NeedsApproval, ToolContext, ToolRegistry, ToolResult, ToolSettings
from tools.catalog import default_registry
from tools.hosts.base import Host
from tools.hosts.ssh.settings import HostSettings, SshSettings
from tools.mappings import merge
from tools.processes import reconcile_processes

Progress = Callable[[str], None]


def own_code() -> list[Path]:
    """The agent's own installed code: its packages, wherever they are installed (located, not imported)."""
    specs = [importlib.util.find_spec(name) for name in ("agent", "tools", "twin", "prompts")]
    return [Path(spec.origin).resolve().parent for spec in specs if spec is not None and spec.origin]


def check_scenario(scenario: str | None) -> None:
    """A :class:`UsageError` when ``--sim`` names no loadable scenario (checked before anything is written)."""
    if scenario:
        from tools.hosts.sim.host import SimHost

        try:
            SimHost.check_scenario(scenario)
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot load simulation scenario {scenario!r}: {error}") from None


def build_tool_settings(
    config: AgentConfig, time_scale: float = 1.0, config_file: Path | None = None, remote: bool = False
) -> ToolSettings:
    """The tools' effective settings: the working directory is always a write root, the agent's code and
    configuration are off limits, and waiting thresholds follow the host's clock (see Host.time_scale). On a
    remote host the engine interpreter, unless configured, is that host's ``python3`` (the agent's own
    interpreter is a path on this machine)."""
    tools = config.tools
    update: dict[str, Any] = {
        "allowed_write_roots": [Path.cwd(), *(root.expanduser() for root in tools.allowed_write_roots)],
        "protected_paths": [*own_code(), *tools.protected_paths],
        "hidden_paths": [*([config_file] if config_file else []), *tools.hidden_paths],
        "load_timeout_seconds": max(tools.load_timeout_seconds / time_scale, 30.0),
        "hang_after_seconds": max(tools.hang_after_seconds / time_scale, 3.0),
    }
    if remote and "engine_python" not in tools.model_fields_set:
        update["engine_python"] = "python3"
    return tools.model_copy(update=update)


def build_policy(name: str, config: AgentConfig, progress: Progress, *, simulated: bool = False) -> Policy:
    """The named policy with its settings from the config; ``simulated``: the run is on the simulated host."""
    if name == "scripted":
        from agent.policies.scripted import ScriptedPolicy

        if not config.script:
            raise UsageError("the scripted policy needs a decisions file: --script FILE")
        return ScriptedPolicy.from_file(Path(config.script))
    if name == "runbook":
        from agent.policies.runbook.policy import RunbookPolicy
        from agent.policies.runbook.settings import RunbookSettings

        # The twin's engines stream in real time: without settings of its own, keep its benchmarks short.
        return RunbookPolicy(config.runbook or (RunbookSettings.quick() if simulated else RunbookSettings()))
    if name == "llm":
        from agent.policies.llm.build import build_llm_policy

        def on_retry(attempt: int, wait_seconds: float, reason: str) -> None:
            progress(f"model call failed ({reason}); retry {attempt} in {wait_seconds:.1f} s")

        return build_llm_policy(
            config.llm, on_retry=on_retry, cost_limited="max_cost_usd" in config.limits.model_fields_set
        )
    raise UsageError(f"unknown policy {name!r}; choose runbook, scripted or llm")


def reconcile(state: ProjectState, hosts: list[Host], progress: Progress) -> None:
    """On resume: re-adopt processes whose (pid, create_time) still match, mark the rest exited."""
    for note in reconcile_processes(state, hosts):
        progress(note)


def tool_context(
    state: ProjectState,
    state_dir: Path,
    hosts: list[Host],
    config: AgentConfig,
    checkpoint: Callable[[], None],
    progress: Progress,
) -> ToolContext:
    """What every tool call sees: the state, the hosts (the first is the default), and the settings."""
    return ToolContext(
        state=state,
        state_dir=state_dir,
        host=hosts[0],
        hosts={host.name: host for host in hosts},
        settings=build_tool_settings(
            config, hosts[0].time_scale, _config_file(state), remote=not hosts[0].shares_agent_files
        ),
        checkpoint=checkpoint,
        progress=progress,
    )


def build_agent(
    state: ProjectState,
    store: StateStore,
    config: AgentConfig,
    progress: Progress,
    on_exit: ExitHandler,
    registry: ToolRegistry | None = None,
    hosts: list[Host] | None = None,
) -> Agent:
    """Everything a run needs, from the state (which records the policy and host) and the config."""
    hosts = hosts or build_hosts(state, store.state_dir, config)
    policy = build_policy(
        state.run.policy or "runbook", config, progress, simulated=state.run.simulated_scenario is not None
    )
    context = tool_context(state, store.state_dir, hosts, config, lambda: store.save(state), progress)
    stuck = StuckDetector(repeat_limit=config.stuck.repeat_limit, idle_limit=config.stuck.idle_limit)
    return Agent(
        policy, registry or default_registry(), context, store, on_exit=on_exit, progress=progress, stuck=stuck
    )


@dataclass
class ToolSession:
    """Direct tool calls on a state directory (``agent tool``, ``agent bench``), made like a run step's."""

    store: StateStore
    state: ProjectState
    context: ToolContext

    def execute(self, registry: ToolRegistry, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call; what the tool recorded is saved and the call journaled. :class:`NeedsApproval`
        propagates, after the state is saved."""
        try:
            result = registry.execute(name, arguments, self.context)
        except NeedsApproval:
            self.store.save(self.state)
            raise
        self.store.journal.record("direct_tool", tool=name, ok=result.ok)
        self.store.save(self.state)
        return result


@contextmanager
def tool_session(
    state_dir: Path,
    config: AgentConfig,
    *,
    goal: str,
    sim: str | None = None,
    progress: Progress = lambda line: None,
    host_overrides: dict[str, Any] | None = None,
) -> Iterator[ToolSession]:
    """Hold the directory's lock (a running agent is never raced), load its state or start one for
    ``goal`` (on the simulated host ``sim``, which must match the state's), and build the tool context.
    ``host_overrides`` (``--host``/``--ssh-config``) are kept in the state like ``sim``, so later calls on the
    directory act on the same hosts."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with StateDirectoryLock(state_dir):
        store = StateStore(state_dir)
        if store.exists():
            state = store.load()
            if sim is not None and state.run.simulated_scenario not in (None, sim):
                raise UsageError(
                    f"this state directory belongs to a run on scenario {state.run.simulated_scenario!r}, not {sim!r}"
                )
        else:
            state = ProjectState(goal=goal)
            progress(f"no state in {state_dir}; creating one for {goal}")
        if sim is not None:
            state.run.simulated_scenario = sim
        given = dict(host_overrides or {})
        recorded = state.run.config_overrides.get("hosts")
        if given.get("hosts") and recorded and recorded != given["hosts"]:
            raise UsageError(f"this state directory belongs to a run on hosts {recorded}, not {given['hosts']}")
        state.run.config_overrides.update(given)
        config = with_run_hosts(config, state)
        hosts = build_hosts(state, state_dir, config)
        context = tool_context(state, state_dir, hosts, config, lambda: store.save(state), progress)
        try:
            yield ToolSession(store, state, context)
        finally:
            close_hosts(hosts)
            store.close()


def with_run_hosts(config: AgentConfig, state: ProjectState) -> AgentConfig:
    """The configuration with the run's own ``--host``/``--ssh-config`` when none were given now (a direct tool
    call on a run's directory acts on that run's hosts)."""
    given = state.run.config_overrides
    if config.hosts or not given.get("hosts"):
        return config
    update: dict[str, Any] = {"hosts": [HostSettings.model_validate(entry) for entry in given["hosts"]]}
    if "ssh" in given:
        update["ssh"] = SshSettings.model_validate(merge(config.ssh.model_dump(), given["ssh"]))
    return config.model_copy(update=update)


def _config_file(state: ProjectState) -> Path | None:
    return Path(state.run.config_file) if state.run.config_file else None


def describe_environment() -> dict[str, Any]:
    """What started this agent, for the journal's ``start`` record (never environment values)."""
    return {"pid": os.getpid(), "python": sys.executable, "cwd": str(Path.cwd())}
