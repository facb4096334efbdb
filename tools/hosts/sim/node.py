"""One node of a multi-node scenario, played on a real host reached over SSH (in the tests: a network namespace).

Everything but the command lines goes to that host unchanged (processes, files, network, forwards), so the
SSH path is exercised whole; engine and SpecForge command lines become the twin's stand-ins, which run there.
The stand-ins are this checkout's own, started with this interpreter: the remote host must see the checkout
at the same path (true of the namespaced test nodes, which share the file system). Each node keeps its own
GPU memory ledger under ``<state>/sim/<scenario>/node<i>/``; the simulated disk (models, SpecForge) is node 0's,
shared by the others as a cluster's model storage is, so the model path is the same on every node.
"""

from __future__ import annotations

from pathlib import Path

from tools.hosts.base import CommandResult, GpuProbe, Host, SpawnedProcess
from tools.hosts.delegate import DelegatingHost
from tools.hosts.sandbox import Confinement
from tools.hosts.sim import facts
from tools.hosts.sim.translate import Translator, is_stand_in
from twin.layout import SimLayout, materialize
from twin.loader import load_scenario
from twin.ports import PORT_MAP_VARIABLE
from twin.scenario import Scenario


def node_layout(state_dir: Path, scenario: Scenario, index: int) -> SimLayout:
    """Node ``index``'s layout; node 0 holds the simulated disk, the others link to it."""
    base = SimLayout.for_state_dir(state_dir, scenario).root
    layout, head = SimLayout(base / f"node{index}"), SimLayout(base / "node0")
    if not head.model_dir(scenario).is_dir():
        materialize(head, scenario)
    if index > 0:
        layout.root.mkdir(parents=True, exist_ok=True)
        if not layout.fs.exists():
            layout.fs.symlink_to(head.fs, target_is_directory=True)
    return layout


class SimulatedNode(DelegatingHost):
    def __init__(self, inner: Host, scenario: Scenario, scenario_file: Path, state_dir: Path, index: int) -> None:
        super().__init__(inner)
        self.scenario, self.scenario_file, self.index = scenario, scenario_file, index
        self.layout = node_layout(state_dir, scenario, index)
        self.translator = Translator(scenario_file, self.layout.root)

    @classmethod
    def over(cls, inner: Host, name_or_path: str, state_dir: Path, index: int) -> SimulatedNode:
        """Node ``index`` of a scenario (by name or file); ValueError when the scenario has fewer nodes."""
        scenario, path = load_scenario(name_or_path)
        if index >= scenario.cluster.nodes:
            raise ValueError(
                f"scenario {scenario.name} has {scenario.cluster.nodes} node(s); "
                f"host {inner.name} would be node {index}"
            )
        return cls(inner, scenario, path, state_dir, index)

    @property
    def time_scale(self) -> float:
        return self.scenario.time_scale

    def translate(self, argv: list[str]) -> list[str]:
        return self.translator.translate(list(argv))

    def run(
        self,
        argv: list[str],
        *,
        timeout: float,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        input_text: str | None = None,
        output_cap_bytes: int = 1_000_000,
        confinement: Confinement | None = None,
    ) -> CommandResult:
        translated = self.translate(argv)
        environment = self._environment(env, is_stand_in(translated))
        result = self.inner.run(
            translated,
            timeout=timeout,
            cwd=cwd,
            env=environment,
            input_text=input_text,
            output_cap_bytes=output_cap_bytes,
            # The node's simulated files live in the state directory, which a sandbox hides.
            confinement=confinement.with_exposed_writable(self.layout.root) if confinement else None,
        )
        return result.model_copy(update={"argv": list(argv)})

    def spawn(self, argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> SpawnedProcess:
        translated = self.translate(argv)
        environment = self._environment(env, is_stand_in(translated))
        return self.inner.spawn(translated, env=environment, log_path=log_path, cwd=cwd)

    def _environment(self, env: dict[str, str] | None, stand_in: bool) -> dict[str, str]:
        """The node's variables without the simulated host's port map: a node is a real host whose ports are
        its own, reached through its own forwards."""
        environment = facts.environment(self.layout, self.scenario, env, stand_in)
        environment.pop(PORT_MAP_VARIABLE, None)
        return environment

    def probe_gpus(self) -> GpuProbe:
        return facts.probe(self.scenario, self.layout.root)

    def gpu_memory_used_mib(self) -> list[int] | None:
        return facts.memory_used(self.scenario, self.layout.root)
