"""The simulated host: a :class:`LocalHost` whose GPUs, engines and training come from a scenario.

Processes are real (spawned, logged, signalled like on the local machine); what they are changes:
engine, SpecForge and data-script command lines become stand-ins (``twin.*``) that accept the
same flags, ``<python> -c`` snippets see the scenario's package versions, and ``nvidia-smi`` and friends
report the scenario's hardware. GPU facts come from the scenario plus the memory ledger the stand-ins
keep. Simulated time runs ``time_scale`` times faster than real time.
"""

from __future__ import annotations

from pathlib import Path

from tools.hosts.base import CommandResult, GpuProbe, SpawnedProcess
from tools.hosts.local import LocalHost
from tools.hosts.sandbox import Confinement
from tools.hosts.sim import facts
from tools.hosts.sim.translate import Translator, is_stand_in
from twin.host_state import HostState
from twin.layout import SimLayout, materialize
from twin.loader import load_scenario
from twin.ports import LOOPBACK_NAMES, PortMap
from twin.scenario import Scenario


class SimHost(LocalHost):
    name = "sim"

    def __init__(self, scenario: Scenario, scenario_file: Path, state_dir: Path, exit_dir: Path | None = None) -> None:
        super().__init__(exit_dir)
        self.scenario = scenario
        self.scenario_file = scenario_file
        self.layout = SimLayout.for_state_dir(state_dir, scenario)
        materialize(self.layout, scenario)
        self.state = HostState(self.layout.root, scenario)
        self.state.start_clock()
        self.translator = Translator(scenario_file, self.layout.root)

    @classmethod
    def from_scenario(cls, name_or_path: str, state_dir: Path) -> SimHost:
        """Load a built-in scenario by name, or a scenario file; raises ScenarioError (a ValueError)."""
        scenario, path = load_scenario(name_or_path)
        return cls(scenario, path, state_dir)

    @staticmethod
    def check_scenario(name_or_path: str) -> None:
        """Raise ScenarioError (a ValueError) or OSError when the scenario cannot be loaded; writes nothing."""
        load_scenario(name_or_path)

    # -- facts a caller may want besides the Host contract ---------------------------------------------

    @property
    def time_scale(self) -> float:
        """Simulated seconds per real second: divide real waiting thresholds by this under simulation."""
        return self.scenario.time_scale

    @property
    def model_dir(self) -> Path:
        return self.layout.model_dir(self.scenario)

    def drafter_dirs(self) -> dict[str, Path]:
        return {drafter.name: self.layout.drafter_dir(drafter) for drafter in self.scenario.drafters}

    # -- commands and processes -----------------------------------------------------------------------

    def endpoint(self, address: str, port: int) -> tuple[str, int]:
        """The simulated host's loopback ports are served on free real ports, so a real service on the same
        port number of this machine is never mistaken for it (and never collides with it)."""
        if address not in LOOPBACK_NAMES:
            return address, port
        return "127.0.0.1", PortMap(self.layout.ports_file).reach(port)

    def connect_error(self, address: str, port: int, timeout: float = 1.0) -> str | None:
        """A connection to the simulated host's own port reaches the real port standing for it."""
        return super().connect_error(*self.endpoint(address, port), timeout=timeout)

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
        env = facts.environment(self.layout, self.scenario, env, is_stand_in(translated))
        result = super().run(
            translated,
            timeout=timeout,
            cwd=cwd,
            env=env,
            input_text=input_text,
            output_cap_bytes=output_cap_bytes,
            confinement=self._confined(confinement) if confinement else None,
        )
        return result.model_copy(update={"argv": list(argv)})

    def _confined(self, confinement: Confinement) -> Confinement:
        """The simulated machine's files live in the state directory, which a sandbox hides: shown again. Its
        loopback ports are served on other real ports: the relays lead there."""
        targets = {port: self.endpoint("127.0.0.1", port)[1] for port in confinement.relay_ports}
        exposed = confinement.with_exposed_writable(self.layout.root)
        return exposed.model_copy(update={"relay_targets": {**confinement.relay_targets, **targets}})

    def spawn(self, argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> SpawnedProcess:
        translated = self.translate(argv)
        env = facts.environment(self.layout, self.scenario, env, is_stand_in(translated))
        return super().spawn(translated, env=env, log_path=log_path, cwd=cwd)

    # -- GPUs -------------------------------------------------------------------------------------------

    def gpu_memory_used_mib(self) -> list[int] | None:
        return facts.memory_used(self.scenario, self.layout.root)

    def probe_gpus(self) -> GpuProbe:
        return facts.probe(self.scenario, self.layout.root, [fault for _, fault in self.state.active_faults()])
