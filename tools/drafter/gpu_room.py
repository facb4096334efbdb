"""Whether the GPUs have room for the hidden-state preparation, and the memory fraction it should claim.

The preparation loads the target with SpecForge's in-process SGLang runner, which claims
``--sglang-mem-fraction-static`` of each GPU it uses (the script's default, 0.4, is too small for a large
target) for the weights and a KV pool. So it needs, on each of its GPUs, that fraction free: a serving engine
normally holds most of every GPU (SGLang's static fraction is 0.8-0.9), and then it must be stopped first.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from tools.base import ToolContext
from tools.drafter.arguments import TrainDrafterArgs
from tools.processes import live_processes

SCRIPT_DEFAULT_FRACTION = 0.4
HEADROOM = 1.1  # weights plus a tenth for the KV pool of a capture batch
ACTIVATIONS_MIB = 4096  # outside the static pool: activations of the forward pass
MAX_FRACTION = 0.95


class GpuRoom(BaseModel):
    gpus: list[int]
    total_mib: int | None = None
    free_mib: dict[int, int] = Field(default_factory=dict)
    weights_per_gpu_mib: float | None = None
    fraction: float | None = None  # to pass as --sglang-mem-fraction-static; None: the script's default
    reason: str = ""

    @property
    def claim_mib(self) -> int | None:
        fraction = self.fraction or SCRIPT_DEFAULT_FRACTION
        return int(fraction * self.total_mib) if self.total_mib else None


def _gpus(args: TrainDrafterArgs, count: int) -> list[int]:
    text = args.env.get("CUDA_VISIBLE_DEVICES")
    visible = [int(item) for item in text.split(",") if item.strip().isdigit()] if text else list(range(count))
    return visible[: args.target_tp_size]


def _weights_gib(args: TrainDrafterArgs, context: ToolContext) -> float | None:
    for model in [context.state.model, *context.state.environment.models]:
        if model.size_gib and args.target_model_path in (model.path, model.name):
            return model.size_gib
    return None


def assess(args: TrainDrafterArgs, context: ToolContext) -> GpuRoom:
    """The GPUs the preparation will use, what is free on them now, and the fraction to claim."""
    environment = context.state.environment
    room = GpuRoom(gpus=_gpus(args, len(environment.gpus)))
    totals = [gpu.memory_total_mib for gpu in environment.gpus if gpu.index in room.gpus and gpu.memory_total_mib]
    room.total_mib = min(totals) if totals else None
    used = context.host.gpu_memory_used_mib()
    if used is not None and room.total_mib:
        room.free_mib = {gpu: room.total_mib - used[gpu] for gpu in room.gpus if gpu < len(used)}
    weights = _weights_gib(args, context)
    if args.prepare_mem_fraction_static is not None:
        room.fraction, room.reason = args.prepare_mem_fraction_static, "given"
    elif weights is None or not room.total_mib:
        room.reason = "model size or GPU memory unknown: the script's default"
    else:
        room.weights_per_gpu_mib = weights * 1024 / args.target_tp_size
        need = (room.weights_per_gpu_mib * HEADROOM + ACTIVATIONS_MIB) / room.total_mib
        room.fraction = max(SCRIPT_DEFAULT_FRACTION, math.ceil(need * 20) / 20)
        room.reason = (
            f"{room.weights_per_gpu_mib / 1024:.1f} GiB of weights per GPU at TP {args.target_tp_size} plus a KV "
            f"pool, of {room.total_mib / 1024:.1f} GiB"
        )
    return room


def shortfall(room: GpuRoom, args: TrainDrafterArgs, context: ToolContext) -> str | None:
    """Why the preparation cannot load the target now, or None when it can (or it cannot be told)."""
    if room.fraction is not None and room.fraction > MAX_FRACTION:
        return (
            f"the target does not fit for preparation at TP {args.target_tp_size}: {room.reason}; raise target_tp_size"
        )
    claim = room.claim_mib
    short = {gpu: free for gpu, free in room.free_mib.items() if claim is not None and free < claim}
    if not short or claim is None:
        return None
    holders = [f"{record.name} (pid {record.pid})" for record in live_processes(context.state, kind="engine")]
    fraction = room.fraction or SCRIPT_DEFAULT_FRACTION
    worst = min(short, key=lambda gpu: short[gpu])
    return (
        f"GPU {worst} has {short[worst] / 1024:.1f} GiB free ({len(short)} of {len(room.gpus)} GPUs short) but the "
        f"preparation claims {claim / 1024:.1f} GiB on each (--sglang-mem-fraction-static {fraction:.2f}; "
        f"{room.reason}); "
        + (f"held by {', '.join(holders)}: stop it after regenerating the data" if holders else "free the GPUs first")
    )
