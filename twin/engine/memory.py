"""The per-GPU memory budget of a launch: weights, KV cache, CUDA graphs, activations.

SGLang reserves ``mem_fraction_static`` of each GPU for weights and KV cache; graphs and activations
must fit in the rest [sgl-0.5.8 model_runner_kv_cache_mixin.py:329; cuda_graph_runner.py:369].
vLLM budgets ``gpu_memory_utilization`` for everything and refuses to start when other processes
already hold more than the rest of the GPU.
"""

from __future__ import annotations

from twin.engine.errors import cuda_graph_failed, out_of_memory
from twin.engine.failure import DRAFT_MIB, INIT_MIB, Failure, MemoryPlan, crash
from twin.engine.launch import LaunchConfig
from twin.rules import Phase
from twin.scenario import Scenario


def _gib(mib: float) -> float:
    return mib / 1024


def _crash(engine: str, phase: Phase, lines: list[str], progress: float = 0.0) -> Failure:
    return crash(engine, phase, lines, "memory", progress)


def _vllm_failure(
    launch: LaunchConfig, total: float, held: float, needs: float, gpu: int, minimum_kv: float
) -> tuple[float, Failure | None]:
    budget = launch.memory_fraction * total
    if budget > total - held:
        return 0.0, _crash(
            "vllm",
            "init",
            [
                f"ValueError: Free memory on device cuda:{gpu} ({_gib(total - held):.2f}/{_gib(total):.2f} GiB) "
                "on "
                f"startup is less than desired GPU memory utilization ({launch.memory_fraction}, "
                f"{_gib(budget):.2f} GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                "processes."
            ],
        )
    kv = budget - INIT_MIB - needs
    if kv < minimum_kv:
        return kv, _crash(
            "vllm",
            "kv_cache",
            [
                "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                "when initializing the engine."
            ],
        )
    return kv, None


def plan_memory(launch: LaunchConfig, scenario: Scenario, gpus: list[int], others_mib: list[int]) -> MemoryPlan:
    """Budget on the tightest GPU in use; ``others_mib`` is memory other processes hold per GPU."""
    plan = MemoryPlan(gpus=gpus)
    if not gpus:
        return plan
    spec, model, engine = scenario.engine, scenario.model, launch.engine
    total = min(scenario.host.gpu_group(index).memory_mib for index in gpus)
    held = max(others_mib[index] for index in gpus) + scenario.host.idle_gpu_memory_mib
    available = total - held - INIT_MIB
    split = max(1, launch.gpus_needed * launch.nnodes)
    weights = model.size_mib / split
    draft = DRAFT_MIB if launch.speculative else 0
    graph = 0.0
    if launch.cuda_graph:
        graph = spec.cuda_graph_memory_mib * launch.cuda_graph_max_bs / spec.default_cuda_graph_max_bs
        graph *= 1.5 if launch.speculative else 1.0
    activations = spec.activation_memory_mib * launch.chunked_prefill_size / spec.default_chunked_prefill_size
    plan.total_mib, plan.weights_mib, plan.draft_mib, plan.graph_mib = total, int(weights), draft, int(graph)
    if weights + draft > available:
        shard_gib = model.size_gb * 1e9 / 2**30 / model.num_shards / split
        free = max(0.0, available - weights * 0.97)
        progress = max(0.05, min(0.97, available / (weights + draft)))
        message = out_of_memory(shard_gib, _gib(total), free, gpus[0])
        plan.failures.append(_crash(engine, "load", [message], progress))
        return plan
    if engine == "vllm":
        kv, failure = _vllm_failure(
            launch, total, held, weights + draft + activations + graph, gpus[0], spec.min_kv_cache_mib
        )
        if failure is not None:
            plan.failures.append(failure)
            return plan
    else:
        kv = min(launch.memory_fraction * total, total - held) - INIT_MIB - weights - draft
        if kv < spec.min_kv_cache_mib:
            plan.failures.append(
                _crash(
                    engine,
                    "kv_cache",
                    [
                        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                        f"Current value: mem_fraction_static={launch.memory_fraction}"
                    ],
                )
            )
            return plan
        rest = available - weights - draft - kv
        if graph > rest:
            message = out_of_memory(_gib(graph - max(rest, 0) + 256), _gib(total), max(rest, 0), gpus[0])
            plan.failures.append(
                _crash(engine, "cuda_graph", cuda_graph_failed(engine, message), max(0.0, min(0.95, rest / graph)))
            )
        elif graph + activations > rest:
            message = out_of_memory(_gib(activations), _gib(total), max(0.0, rest - graph), gpus[0])
            plan.failures.append(_crash(engine, "warmup", [message]))
    plan.kv_mib = int(kv)
    per_token = float(model.kv_bytes_per_token)
    if model.attention != "mla":
        per_token /= max(1, launch.tp_size)
    plan.kv_tokens = int(kv * 2**20 / per_token)
    return plan
