"""Which hosts a run acts on: the local machine, the simulated host (``--sim``), or machines reached over SSH
(``--host``, ``[[hosts]]``), node 0 first; with both ``--sim`` and hosts, each remote host runs the scenario's
stand-ins (a simulated node of a multi-node scenario).

The simulated host and the SSH host are imported only when chosen, so the CLI starts quickly.
"""

from __future__ import annotations

from pathlib import Path

from agent.events import UsageError
from agent.settings import AgentConfig
from agent.state import ProjectState
from tools.hosts.base import Host


def _ssh_hosts(state: ProjectState, config: AgentConfig) -> list[Host]:
    from tools.hosts.ssh.host import SshHost
    from tools.hosts.ssh.target import SshTarget

    hosts: list[Host] = []
    for entry in config.hosts:
        hosts.append(
            SshHost(
                SshTarget.parse(entry.target),
                name=entry.label,
                ssh_config=Path(config.ssh.config).expanduser() if config.ssh.config else None,
                control_dir=Path(config.ssh.control_dir) if config.ssh.control_dir else None,
                python=entry.python,
                run_id=state.run_id,
                working_dir=entry.working_dir,
                write_roots=entry.write_roots,
                remote_dir=entry.remote_dir,
                connect_timeout=config.ssh.connect_timeout_seconds,
            )
        )
    names = [host.name for host in hosts]
    if len(set(names)) != len(names):
        raise UsageError(f"two hosts have the same name ({', '.join(names)}); give each a name in [[hosts]]")
    return hosts


def build_hosts(state: ProjectState, state_dir: Path, config: AgentConfig) -> list[Host]:
    """The run's hosts, first one first. Raises UsageError for an unknown scenario or clashing host names."""
    scenario = state.run.simulated_scenario
    remote = _ssh_hosts(state, config) if config.hosts else []
    if scenario:
        from tools.hosts.sim.host import SimHost
        from tools.hosts.sim.node import SimulatedNode

        try:
            if remote:
                return [SimulatedNode.over(host, scenario, state_dir, index) for index, host in enumerate(remote)]
            simulated = SimHost.from_scenario(scenario, state_dir)
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot load simulation scenario {scenario!r}: {error}") from None
        nodes = simulated.scenario.cluster.nodes
        if nodes > 1:
            raise UsageError(
                f"scenario {scenario!r} has {nodes} nodes: give one --host per node (python -m twin.cluster up "
                f"{scenario} DIR builds them as network namespaces with an sshd each)"
            )
        return [simulated]
    if remote:
        return remote
    from tools.hosts.local import LocalHost

    return [LocalHost()]


def close_hosts(hosts: list[Host]) -> None:
    """End the helper sessions of remote hosts (their shared connections stay for the next command)."""
    for host in hosts:
        close = getattr(host, "close", None)
        if callable(close):
            close()
