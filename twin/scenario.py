"""The scenario document: a simulated host, its model and drafters, and how its engines behave.

A scenario is a TOML file (format documented in ``docs/scenarios.md``) validated by these models.
Every model forbids unknown keys, so a misspelt field is an error that names it. Times are in
simulated seconds; ``time_scale`` says how many simulated seconds pass per real second. Version 2 adds
faults that strike mid-run, outcomes that depend on the attempt or the host's clock, delayed outcomes,
the load's I/O and host memory, and the expected outcome; a version 1 file may not use them
(:func:`v2_fields_used`), so it keeps its meaning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from twin.expect import Expectation
from twin.rules import Modifier, Phase, Rule

FORMAT_VERSIONS = (1, 2)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # scenario numbers are finite


class GpuGroup(Strict):
    """``count`` identical GPUs; groups are numbered in order from GPU 0."""

    name: str
    compute_capability: str = Field(pattern=r"^\d+\.\d+$")
    memory_mib: int = Field(gt=0)
    count: int = Field(default=1, ge=1, le=64)


class GpuFault(Strict):
    """A hardware fault on one GPU: reported by the probe, fatal to any engine that uses the GPU.

    Without a trigger it is there from the start (version 1). Version 2 triggers make it strike mid-run:
    during the ``after_launch``-th engine start on this host (at phase ``at``, ``progress`` of the way
    through it, or ``after_seconds`` into it), or when the host's clock reaches ``at_host_seconds``.
    From then on the probe, ``nvidia-smi`` and ``dmesg`` report it.
    """

    gpu: int = Field(ge=0)
    xid: list[int] = Field(default_factory=list)
    ecc_uncorrected: int = Field(default=0, ge=0)
    # Extra kernel log lines (``dmesg``); lines for each Xid are generated when left empty.
    dmesg: list[str] = Field(default_factory=list)
    # What an engine using this GPU prints before it dies; a CUDA ECC error when left empty.
    engine_log: list[str] = Field(default_factory=list)
    exit_code: int = Field(default=1, ge=0, le=255)
    # Version 2: the GPU falls off the bus (gone from the probe and nvidia-smi), and the triggers.
    lost: bool = False
    after_launch: int | None = Field(default=None, ge=1)
    at: Phase = "init"
    progress: float = Field(default=0.0, ge=0.0, le=1.0)
    after_seconds: float = Field(default=0.0, ge=0.0)
    at_host_seconds: float | None = Field(default=None, ge=0.0)
    # What an engine using the GPU does when the fault strikes: dies, or hangs (a collective never returns).
    engine_effect: Literal["crash", "hang"] = "crash"

    @property
    def triggered(self) -> bool:
        """False for a fault present from the start."""
        return self.after_launch is not None or self.at_host_seconds is not None


class HostSpec(Strict):
    hostname: str = "sim-host"
    cpu_model: str
    cpu_cores: int = Field(ge=1)
    ram_gib: float = Field(gt=0)
    disk_free_gib: float = Field(ge=0)
    driver_version: str | None = None
    cuda_version: str | None = None
    interconnect: Literal["nvlink", "pcie", "none"] = "pcie"
    # nvidia-smi topo vocabulary for every GPU pair (NV#, PIX, PXB, PHB, NODE, SYS); derived when unset.
    gpu_link: str | None = None
    p2p_supported: bool = True
    gpus: list[GpuGroup] = Field(default_factory=list)
    faults: list[GpuFault] = Field(default_factory=list)
    # Ports already held by some other program on the host (an engine binding one of them fails).
    ports_in_use: list[int] = Field(default_factory=list)
    idle_gpu_memory_mib: int = Field(default=0, ge=0)
    # Version 2: host memory other programs already use (the OOM killer compares loads against the rest).
    ram_used_gib: float = Field(default=0.0, ge=0)

    @property
    def gpu_count(self) -> int:
        return sum(group.count for group in self.gpus)

    def gpu_group(self, index: int) -> GpuGroup:
        for group in self.gpus:
            if index < group.count:
                return group
            index -= group.count
        raise IndexError(index)

    def link(self) -> str:
        if self.gpu_link:
            return self.gpu_link
        return {"nvlink": "NV18", "pcie": "NODE", "none": "SYS"}[self.interconnect]

    @model_validator(mode="after")
    def _faults_name_real_gpus(self) -> HostSpec:
        for position, fault in enumerate(self.faults):
            if fault.gpu >= self.gpu_count:
                raise ValueError(
                    f"faults[{position}].gpu is {fault.gpu} but the host has {self.gpu_count} GPUs (numbered from 0)"
                )
        return self


class ModelSpec(Strict):
    """The target model as it lies on the simulated disk."""

    name: str  # Hugging Face id, e.g. moonshotai/Kimi-K2.5
    dir_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    served_name: str | None = None
    architecture: str
    model_type: str
    size_gb: float = Field(gt=0)  # weights on disk, decimal GB as model cards state them
    num_layers: int = Field(ge=1)
    num_experts: int | None = None
    attention: Literal["mla", "gqa", "mha"] = "gqa"
    quantization: str | None = None
    dtype: str = "bfloat16"
    context_length: int = Field(default=131072, ge=1)
    vocab_size: int = Field(default=128256, ge=1)
    hidden_size: int = Field(default=4096, ge=1)
    num_shards: int = Field(default=16, ge=1)
    # KV cache bytes per token for the whole model at TP 1; MLA caches are replicated, not split.
    kv_bytes_per_token: int = Field(default=131072, ge=1)

    @property
    def size_mib(self) -> float:
        return self.size_gb * 1e9 / 2**20


class DrafterSpec(Strict):
    """An EAGLE-3 drafter already on the simulated disk."""

    name: str
    dir_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    architecture: str = "LlamaForCausalLMEagle3"
    # Mean acceptance length (bonus token included) at 3 steps, top-k 1, 4 draft tokens.
    accept_length: float = Field(ge=1.0, le=4.0)
    description: str = ""


class PhaseTimes(Strict):
    """Simulated seconds each start-up phase takes."""

    init: float = Field(default=20.0, ge=0)
    load: float = Field(default=120.0, ge=0)
    # Seconds between shard progress lines while loading: a long gap makes a live load look hung.
    progress_interval: float = Field(default=10.0, gt=0)
    kv_cache: float = Field(default=5.0, ge=0)
    cuda_graph: float = Field(default=30.0, ge=0)
    warmup: float = Field(default=5.0, ge=0)
    draft_load: float = Field(default=10.0, ge=0)


class LoadSpec(Strict):
    """Version 2: what a weight load does besides printing progress lines."""

    # "grows": GPU memory rises with the load; "at_end": the weights reach the GPUs only when it ends.
    gpu_memory: Literal["grows", "at_end"] = "grows"
    # The loading process really reads (its I/O counters rise) while it loads.
    reads_weights: bool = False
    # Peak host memory of the load (all ranks together); above the free RAM the kernel's OOM killer
    # kills the engine part-way through, with a SIGKILL and an ``Out of memory: Killed process`` line.
    host_ram_gib: float = Field(default=0.0, ge=0)


class EngineSpec(Strict):
    """Engine defaults and memory physics shared by SGLang and vLLM launches."""

    # Attention backend used when the command line names none; unset means the engine's own rule.
    default_attention_backend: str | None = None
    default_mem_fraction_static: float = Field(default=0.88, gt=0, lt=1)
    default_gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)
    default_cuda_graph_max_bs: int = Field(default=160, ge=1)
    # Memory for CUDA graphs at the default batch cap (scales with the cap) and for activations at
    # the default chunked-prefill size (scales with it); both must fit outside the static pool.
    cuda_graph_memory_mib: int = Field(default=2048, ge=0)
    activation_memory_mib: int = Field(default=2048, ge=0)
    default_chunked_prefill_size: int = Field(default=8192, ge=1)
    min_kv_cache_mib: int = Field(default=1024, ge=0)
    phases: PhaseTimes = Field(default_factory=PhaseTimes)
    load: LoadSpec = Field(default_factory=LoadSpec)


class PerformanceSpec(Strict):
    single_stream_tok_s: float = Field(gt=0)
    peak_tok_s: float = Field(gt=0)
    ttft_ms: float = Field(default=100.0, ge=0)
    prefill_tok_s: float = Field(default=20000.0, gt=0)
    max_running_requests: int = Field(default=256, ge=1)

    @model_validator(mode="after")
    def _peak_not_below_single(self) -> PerformanceSpec:
        if self.peak_tok_s < self.single_stream_tok_s:
            raise ValueError("peak_tok_s must be at least single_stream_tok_s")
        return self


class SpeculativeSpec(Strict):
    # Cost of one draft step relative to one target decode step:
    # speed-up = accept_length / (1 + steps * cost).
    draft_step_cost: float = Field(default=0.4, ge=0)
    # Fraction of the speculative single-stream gain (or loss) that survives at peak batch sizes.
    peak_efficiency: float = Field(default=0.9, gt=0, le=1.5)
    # Acceptance of a drafter directory that records no quality of its own.
    default_accept_length: float = Field(default=1.45, ge=1.0, le=4.0)


class SpecForgeEnvironment(Strict):
    """SpecForge's own virtual environment on the simulated host (``<checkout>/.venv``): it pins torch and
    sglang, so it is kept apart from the engine environment (``[packages]``)."""

    packages: dict[str, str] = Field(default_factory=dict)
    # When set, every program of this environment that imports torch fails with this line (a broken install).
    error: str | None = None

    @field_validator("packages")
    @classmethod
    def _normalise_packages(cls, value: dict[str, str]) -> dict[str, str]:
        return {normalise_package(name): version for name, version in value.items()}


# Flag sets of the checkout's scripts/prepare_hidden_states.py, named after the flag that tells them apart:
# ``aux-hidden-states`` (to 2026-07-13), ``capture-layers`` (2026-07-14 to 07-20), ``strategy`` (from 2026-07-21).
PrepareScript = Literal["aux-hidden-states", "capture-layers", "strategy"]


class TrainingSpec(Strict):
    """How the SpecForge stand-in trains: quality depends on the data and on the number of steps."""

    seconds_per_step: float = Field(default=1.0, ge=0)
    # Acceptance length of a converged drafter trained on generic data and on data regenerated by the target.
    generic_accept_length: float = Field(default=1.8, ge=1.0, le=4.0)
    target_accept_length: float = Field(default=2.95, ge=1.0, le=4.0)
    steps_to_converge: int = Field(default=300, ge=1)
    # GPU memory one training rank needs; training fails with OOM when a GPU it uses has less free.
    gpu_memory_gib: float = Field(default=0.0, ge=0)
    checkout_dir_name: str = Field(default="SpecForge", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    draft_config_name: str = Field(default="eagle3-draft.json", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*\.json$")
    dataset_samples: int = Field(default=64, ge=1)
    environment: SpecForgeEnvironment | None = None  # None: the host has no SpecForge environment
    prepare_script: PrepareScript = "strategy"
    # Simulated seconds the hidden-state preparation spends per sample once the target is loaded.
    prepare_seconds_per_sample: float = Field(default=0.5, ge=0)


class ClusterSpec(Strict):
    """Several identical nodes (each one the ``[host]``) on one cluster network, and what that network does.

    The network itself is real: ``twin.cluster`` builds it (network namespaces, veth pairs, one sshd per node)
    and the stand-ins rendezvous and exchange NCCL traffic over it with real sockets.
    """

    nodes: int = Field(default=1, ge=1, le=16)
    # An interface every node lists before the cluster network (a management NIC) that reaches no other node;
    # NCCL's own choice falls on it unless NCCL_SOCKET_IFNAME names the cluster interface.
    decoy_interface: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9]{1,14}$")
    # Nodes that node 0 cannot reach on the cluster network, nor they it (a firewall between them).
    isolated_nodes: list[int] = Field(default_factory=list)
    # Simulated seconds rank 0 waits for the other nodes at the init address (torch's store timeout), and a
    # rank above 0 keeps trying to reach it.
    rendezvous_timeout: float = Field(default=1800.0, gt=0)
    connect_timeout: float = Field(default=600.0, gt=0)

    @model_validator(mode="after")
    def _isolated_nodes_exist(self) -> ClusterSpec:
        wrong = [node for node in self.isolated_nodes if not 1 <= node < self.nodes]
        if wrong:
            raise ValueError(
                f"isolated_nodes {wrong} must be nodes 1..{self.nodes - 1} (node 0 holds the init address)"
            )
        return self


class Scenario(Strict):
    format_version: int
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    description: str = ""
    # Version 2: where the behaviour comes from (issue threads, real logs), and what the agent should do.
    sources: list[str] = Field(default_factory=list)
    expect: Expectation | None = None
    time_scale: float = Field(default=100.0, gt=0)
    host: HostSpec
    packages: dict[str, str] = Field(default_factory=dict)
    model: ModelSpec
    drafters: list[DrafterSpec] = Field(default_factory=list)
    engine: EngineSpec = Field(default_factory=EngineSpec)
    performance: PerformanceSpec
    speculative: SpeculativeSpec = Field(default_factory=SpeculativeSpec)
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    rules: list[Rule] = Field(default_factory=list)
    modifiers: list[Modifier] = Field(default_factory=list)
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)

    @field_validator("format_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value not in FORMAT_VERSIONS:
            raise ValueError(f"unsupported format_version {value}; this release reads versions 1 and 2")
        return value

    @model_validator(mode="after")
    def _version_1_keeps_its_meaning(self) -> Scenario:
        used = v2_fields_used(self)
        if self.format_version == 1 and used:
            raise ValueError(f"{used[0]} needs format_version = 2")
        for position, fault in enumerate(self.host.faults):
            if fault.after_seconds and fault.progress:
                raise ValueError(f"host.faults[{position}]: give progress or after_seconds, not both")
        return self

    @field_validator("packages")
    @classmethod
    def _normalise_packages(cls, value: dict[str, str]) -> dict[str, str]:
        return {normalise_package(name): version for name, version in value.items()}

    def package_version(self, name: str) -> str | None:
        return self.packages.get(normalise_package(name))


def normalise_package(name: str) -> str:
    """Distribution names compare case-insensitively with ``-``, ``_`` and ``.`` equivalent (PEP 503)."""
    return "-".join(part for part in name.lower().replace("_", "-").replace(".", "-").split("-") if part)


def _set(model: BaseModel, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in model.model_fields_set]


def v2_fields_used(scenario: Scenario) -> list[str]:
    """The version-2 fields a scenario sets (a version 1 file may set none)."""
    used = [f"{name}" for name in _set(scenario, ("sources", "expect"))]
    used += [f"host.{name}" for name in _set(scenario.host, ("ram_used_gib",))]
    fault_fields = ("lost", "after_launch", "at", "progress", "after_seconds", "at_host_seconds", "engine_effect")
    for position, fault in enumerate(scenario.host.faults):
        used += [f"host.faults[{position}].{name}" for name in _set(fault, fault_fields)]
    used += [f"engine.{name}" for name in _set(scenario.engine, ("load",))]
    for position, rule in enumerate(scenario.rules):
        used += [f"rules[{position}].{name}" for name in _set(rule, ("after_seconds",))]
        used += [f"rules[{position}].when.{name}" for name in _set(rule.when, ("attempt", "host_seconds"))]
    for position, modifier in enumerate(scenario.modifiers):
        used += [f"modifiers[{position}].when.{name}" for name in _set(modifier.when, ("attempt", "host_seconds"))]
    return used
