"""Where things run. Tools talk to a :class:`Host`, never to the OS directly.

Implementations: the local machine (``tools.hosts.local``), the simulated host of the digital twin
(``tools.hosts.sim.host``), and a machine reached over SSH (``tools.hosts.ssh.host``). Adding a host must not
require touching any tool: a host runs commands, starts and watches detached processes, reads its files
(logs from the end, confined edits), reaches its network, and reports GPU facts.

Paths given to a host are paths on that host. Files and logs of a remote host are read there, never copied.
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tools.document import Document
from tools.hosts.sandbox.confinement import Confinement
from tools.logs.reader import SinceRead, TailRead
from tools.logs.window import LogWindow

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
    """A live process that carries a marker variable in its environment (a group leader, or a member of a
    group whose leader is gone)."""

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


class FileFacts(BaseModel):
    """A regular file on a host: its size, and seconds since its last change by that host's own clock."""

    size: int
    age_seconds: float


class LineFilter(BaseModel):
    """Keep only lines containing ``pattern`` (case-insensitive), or matching it as a regex when ``regex``."""

    pattern: str
    regex: bool = False


class ConfinedFile(BaseModel):
    """A file read through the write guard: its real path, bytes, and the identity a later write checks."""

    path: str
    data: bytes
    inode: int
    device: int
    mode: int = 0o600  # its permission bits


class NetworkInterface(BaseModel):
    """An interface as the host lists it (in that order), with its IPv4 addresses as ``address/prefix``."""

    name: str
    index: int = 0
    up: bool | None = None
    addresses: list[str] = Field(default_factory=list)


class HostUnreachable(Exception):
    """The host cannot be reached (network, authentication, refused host key); nothing was done there.

    ``needs_human``: only a person can fix it (a changed or unknown host key); tools turn it into a question
    with ``evidence`` and ``options`` instead of an error result.
    """

    def __init__(
        self,
        message: str,
        *,
        needs_human: bool = False,
        evidence: list[str] | None = None,
        options: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.needs_human = needs_human
        self.evidence = list(evidence or [])
        self.options = list(options or ["retry", "stop here"])


class CallInterrupted(Exception):
    """The connection to the host dropped while an operation ran there: it may or may not have taken effect."""


class Host(ABC):
    name: str = "host"
    # The host sees the agent's own files (the local machine, the simulated host); False for a remote one.
    shares_agent_files: bool = True

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

    def group_members(self, pgid: int, variable: str) -> list[MarkedProcess]:
        """Live processes of process group ``pgid`` whose environment holds ``variable`` (inherited from the
        process the agent spawned): what is left of a managed process whose group leader is gone, e.g. an
        engine's workers after the supervisor was killed. Hosts that cannot tell return []."""
        return []

    def signal_process(self, pid: int, create_time: float, signum: int) -> bool:
        """Signal one process, only if (pid, create_time) still match. True if sent; hosts that cannot
        signal single processes return False."""
        return False

    @property
    def time_scale(self) -> float:
        """Host seconds per real second: 1 for real machines; the simulated host compresses its clock, and
        waiting thresholds (hang detection, load timeouts) are divided by this."""
        return 1.0

    def translate(self, argv: list[str]) -> list[str]:
        """Map a real command line onto this host (the simulated host swaps in its stand-ins)."""
        return argv

    # -- files (paths on this host) ----------------------------------------------------------------------

    @abstractmethod
    def file_facts(self, path: str) -> FileFacts | None:
        """Size and modification time of a regular file, or None when there is no such file."""

    @abstractmethod
    def read_last_lines(
        self, path: str, max_lines: int, *, max_bytes: int, line_filter: LineFilter | None = None
    ) -> TailRead:
        """The last lines of a log, read backwards from its end (see :func:`tools.logs.reader.read_last_lines`)."""

    @abstractmethod
    def read_since(self, path: str, offset: int, *, max_bytes: int) -> SinceRead:
        """Complete lines written after a byte offset (see :func:`tools.logs.reader.read_since`)."""

    @abstractmethod
    def read_window(self, path: str, *, head_bytes: int, tail_bytes: int) -> LogWindow:
        """A bounded head and tail of a log for diagnosis (see :func:`tools.logs.window.read_window`)."""

    @abstractmethod
    def read_confined(self, raw_path: str, roots: list[str]) -> ConfinedFile:
        """Read a file inside the write roots without following links; raises ``WriteRefused``."""

    @abstractmethod
    def write_confined(self, raw_path: str, roots: list[str], data: bytes, expected: ConfinedFile | None) -> None:
        """Atomically replace a confined file; with ``expected``, only if it is still that file."""

    @abstractmethod
    def real_path(self, path: str) -> str:
        """The path with symbolic links resolved on this host (what the shell guard judges)."""

    @abstractmethod
    def home(self) -> str:
        """The home directory of the user the host runs commands as."""

    def log_dir(self, agent_logs: Path) -> Path:
        """Where logs of processes started on this host go; local hosts use the agent's state directory."""
        return agent_logs

    def agent_places(self) -> list[str]:
        """The agent's own files on this host besides its state directory (a remote host's helper and run
        records), which no tool may change; hosts whose files are the agent's own have none."""
        return []

    def working_dir(self) -> Path:
        """Where relative paths and the shell start on this host."""
        return Path.cwd()

    def write_roots(self, configured: list[Path]) -> list[Path]:
        """Directories patch_file may write in on this host (``configured``: the tools' setting)."""
        return configured

    # -- network (addresses as seen from this host) -------------------------------------------------------

    @abstractmethod
    def connect_error(self, address: str, port: int, timeout: float = 1.0) -> str | None:
        """Try a TCP connection from this host; None when it succeeded, else what went wrong."""

    def endpoint(self, address: str, port: int) -> tuple[str, int]:
        """Where the agent connects to reach ``address:port`` as this host sees it (a remote host forwards)."""
        return address, port

    @abstractmethod
    def interfaces(self) -> list[NetworkInterface]:
        """The host's network interfaces in the order the system lists them."""

    @abstractmethod
    def route_to(self, address: str) -> tuple[str | None, str | None]:
        """(interface, source address) this host uses to reach ``address``; (None, None) when it has no route."""

    @abstractmethod
    def infiniband_ports(self) -> list[dict[str, str]]:
        """InfiniBand/RoCE ports: ``device``, ``port``, ``state`` (e.g. ``4: ACTIVE``), ``link_layer``."""

    @abstractmethod
    def clock(self) -> float:
        """The host's wall clock (seconds since the epoch)."""

    @abstractmethod
    def listen(self, address: str, port: int, seconds: float) -> tuple[int | None, str | None]:
        """Accept (and drop) TCP connections on ``address:port`` (0: any free port) for at most ``seconds``, so
        other hosts can test that they reach this one; (port, None), or (None, the error)."""

    @abstractmethod
    def stop_listening(self, port: int) -> None:
        """Close a listener opened by :meth:`listen` before its time is up."""
