"""Where things run. Tools talk to a :class:`Host`, never to the OS directly.

Implementations: the local machine (``tools.hosts.local``), the simulated host of the digital twin
(``tools.hosts.sim.host``), and later an SSH host. Adding a host must not require touching any tool: a host
runs commands, starts and watches detached processes, and reports GPU facts.
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tools.document import Document
from tools.hosts.sandbox.confinement import Confinement

Interconnect = Literal["nvlink", "pcie", "none", "unknown"]


class GpuInfo(Document):
    """One GPU as the host reports it."""

    index: int
    name: str
    compute_capability: str = ""
    memory_total_mib: int = 0
    memory_used_mib: int = 0
    utilization_percent: int | None = None
    temperature_c: int | None = None
    ecc_errors_uncorrected: int | None = None
    xid_errors: list[str] = Field(default_factory=list)


class GpuLink(Document):
    """How two GPUs talk to each other (one entry per unordered pair)."""

    gpu_a: int
    gpu_b: int
    link: str = "unknown"  # nvidia-smi topo vocabulary: NV#, PIX, PXB, PHB, NODE, SYS
    p2p_supported: bool | None = None


class CommandResult(BaseModel):
    argv: list[str]
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_seconds: float = 0.0


class SpawnedProcess(BaseModel):
    pid: int
    create_time: float


class MarkedProcess(BaseModel):
    """A live process-group leader that carries a marker variable in its environment."""

    pid: int
    create_time: float
    value: str  # the marker variable's value
    argv: list[str] = Field(default_factory=list)


class ProcessStatus(BaseModel):
    """A snapshot of a managed process. ``alive`` is False when (pid, create_time) no longer match."""

    alive: bool
    identity_matches: bool = True
    exit_code: int | None = None
    cpu_seconds: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    rss_bytes: int | None = None


class GpuProbe(BaseModel):
    """GPU facts from NVML (or the scenario). ``error`` explains an empty result, e.g. no driver."""

    gpus: list[GpuInfo] = Field(default_factory=list)
    topology: list[GpuLink] = Field(default_factory=list)
    interconnect: Interconnect = "unknown"
    driver_version: str | None = None
    cuda_version: str | None = None
    error: str | None = None


class Host(ABC):
    name: str = "host"

    @abstractmethod
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
        """Run a command to completion in its own process group; on timeout kill the whole group. With a
        ``confinement`` it runs in the sandbox, or :class:`SandboxUnavailable` is raised."""

    @abstractmethod
    def spawn(self, argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> SpawnedProcess:
        """Start a detached process (own session and group), stdout and stderr appended to log_path.

        ``env`` holds only the variables to add to the host's environment. The process outlives the
        agent; its exit code must stay readable after the agent restarts.
        """

    @abstractmethod
    def status(self, pid: int, create_time: float) -> ProcessStatus:
        """Status of a process the agent started; identity is checked by (pid, create_time)."""

    @abstractmethod
    def signal_group(self, pid: int, create_time: float, signum: int = signal.SIGTERM) -> bool:
        """Signal the process group led by pid, only if (pid, create_time) still match. True if sent."""

    @abstractmethod
    def probe_gpus(self) -> GpuProbe:
        """GPU inventory, topology, driver and CUDA versions; never raises for a missing driver."""

    @abstractmethod
    def gpu_memory_used_mib(self) -> list[int] | None:
        """Current memory use per GPU, or None when it cannot be read (used to tell loading from hung)."""

    def find_marked(self, variable: str) -> list[MarkedProcess]:
        """Live process-group leaders whose environment holds ``variable``: processes the agent spawned but
        may not have recorded (it was killed right after spawning). Hosts that cannot tell return []."""
        return []

    @property
    def time_scale(self) -> float:
        """Host seconds per real second: 1 for real machines; the simulated host compresses its clock, and
        waiting thresholds (hang detection, load timeouts) are divided by this."""
        return 1.0

    def translate(self, argv: list[str]) -> list[str]:
        """Map a real command line onto this host (the simulated host swaps in its stand-ins)."""
        return argv
