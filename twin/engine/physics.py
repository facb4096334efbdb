"""What the simulated disk and GPUs make happen, whatever the scenario's rules say.

Checks the model and drafter paths and the GPUs a launch needs (count, faults). Each problem is a
:class:`Failure` at the phase where the real engine would hit it. Memory is in :mod:`memory`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from twin.engine.failure import Drafter, Failure, crash
from twin.engine.flag_tables import parse_version
from twin.engine.launch import EAGLE_ALGORITHMS, LaunchConfig
from twin.layout import SimLayout
from twin.quality import per_position_from_length, read_quality
from twin.scenario import GpuFault, Scenario

DRAFT_ARCHITECTURES = {
    "sglang": {"LlamaForCausalLMEagle3", "LlamaForCausalLMEagle"},
    "vllm": {"LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "EagleLlamaForCausalLM"},
}


def missing_path_error(path: str) -> str:
    if path.startswith(("/", ".", "~")):
        return (
            f"OSError: Incorrect path_or_model_id: '{path}'. Please provide either the path to a local "
            "folder or the repo_id of a model on the Hub."
        )
    return (
        f"OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
        f"them in the cached files. Check your connection or see how to run the library in offline mode. "
        f"({path})"
    )


def check_model(launch: LaunchConfig, scenario: Scenario, layout: SimLayout) -> Failure | None:
    path, model_dir = launch.model_path, layout.model_dir(scenario)
    if path == scenario.model.name or (Path(path).exists() and Path(path).resolve() == model_dir.resolve()):
        return None
    if Path(path).exists():
        error = (
            f"ValueError: [simulated host] {path} is not a model this host can run; the simulated disk "
            f"holds {scenario.model.name} at {model_dir}"
        )
    else:
        error = missing_path_error(path)
    return crash(launch.engine, "args", [error], "model path")


def check_attention(launch: LaunchConfig, scenario: Scenario) -> Failure | None:
    """vLLM keeps MLA and non-MLA backends apart: the wrong family is rejected at model load (0.33)."""
    if launch.engine != "vllm":
        return None
    backend = launch.attention_backend.upper()
    mla_backend = backend.endswith("MLA")
    if mla_backend == (scenario.model.attention == "mla"):
        return None
    reason = "MLA not supported" if scenario.model.attention == "mla" else "non-MLA not supported"
    return crash(
        "vllm",
        "load",
        [f"ValueError: Selected backend {backend} is not valid for this configuration. Reason: ['{reason}']"],
        "attention backend",
    )


def _drafter_directory(draft_path: str, scenario: Scenario, layout: SimLayout) -> Path:
    """A scenario drafter named by its hub id resolves like a cache hit; anything else is a path."""
    for drafter in scenario.drafters:
        if draft_path == drafter.name:
            return layout.drafter_dir(drafter)
    return Path(draft_path)


def _architecture(directory: Path) -> str:
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        return str((config.get("architectures") or ["?"])[0])
    except (OSError, ValueError, AttributeError):
        return "?"


def resolve_drafter(launch: LaunchConfig, scenario: Scenario, layout: SimLayout) -> Drafter | Failure | None:
    spec, engine = launch.speculative, launch.engine
    if spec is None:
        return None
    if spec.algorithm not in EAGLE_ALGORITHMS:
        error = (
            f"NotImplementedError: [simulated host] speculative algorithm {spec.algorithm} is not "
            "simulated; use EAGLE3 with a drafter"
        )
        return crash(engine, "args", [error], "speculative")
    if not spec.draft_path:
        return crash(
            engine,
            "args",
            [f"ValueError: a draft model path is required for {spec.algorithm} speculative decoding"],
            "speculative",
        )
    directory = _drafter_directory(spec.draft_path, scenario, layout)
    if not (directory / "config.json").is_file():
        return crash(engine, "args", [missing_path_error(spec.draft_path)], "drafter path")
    architecture = _architecture(directory)
    supported = set(DRAFT_ARCHITECTURES[engine])
    if engine == "sglang" and parse_version(launch.version) >= (0, 5, 14):
        supported.add("Eagle3DeepseekV2ForCausalLM")  # kimi_k25_eagle3.py appears in 0.5.14
    if architecture not in supported:
        return crash(
            engine,
            "load",
            [
                f"ValueError: Model architectures ['{architecture}'] are not supported "
                f"for now. Supported architectures: {sorted(supported)}"
            ],
            "drafter architecture",
            progress=1.0,
        )
    if (
        engine == "sglang"
        and scenario.model.architecture == "KimiK25ForConditionalGeneration"
        and parse_version(launch.version) < (0, 5, 10)
    ):
        # Kimi-K2.5 forwards EAGLE-3 layer capture to its language model from 0.5.10 (sglang PR #19689).
        error = (
            "AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute 'set_eagle3_layers_to_capture'"
        )
        return crash(engine, "load", [error], "engine version", progress=1.0)
    quality = read_quality(directory)
    if quality is None:
        quality = per_position_from_length(scenario.speculative.default_accept_length)
    return Drafter(path=str(directory), name=spec.draft_path, per_position=quality)


def visible_gpus(scenario: Scenario, env: Mapping[str, str], lost: set[int] | None = None) -> list[int]:
    """Physical GPU indices in CUDA order; like CUDA, the list stops at the first invalid entry. A GPU that
    fell off the bus (``lost``) is not enumerated."""
    count, lost = scenario.host.gpu_count, lost or set()
    text = env.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return [index for index in range(count) if index not in lost]
    indices: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) >= count:
            break
        if int(item) not in lost:
            indices.append(int(item))
    return indices


def fault_lines(ecc: bool, rank: int, gpu: int) -> list[str]:
    return [
        "RuntimeError: CUDA error: uncorrectable ECC error encountered"
        if ecc
        else "RuntimeError: CUDA error: unspecified launch failure",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        f"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions. (TP rank {rank}, GPU {gpu})",
    ]


def check_gpus(
    launch: LaunchConfig, scenario: Scenario, env: Mapping[str, str], active: list[GpuFault]
) -> tuple[list[int], Failure | None]:
    """The GPUs this launch uses, and the failure a fault in effect (``active``) on one of them causes."""
    visible = visible_gpus(scenario, env, {fault.gpu for fault in active if fault.lost})
    used = visible[launch.base_gpu : launch.base_gpu + launch.gpus_needed]
    if not visible:
        return [], crash(launch.engine, "init", ["RuntimeError: No CUDA GPUs are available"], "gpus")
    if len(used) < launch.gpus_needed:
        return used, crash(
            launch.engine,
            "init",
            [
                f"RuntimeError: CUDA error: invalid device ordinal (this launch needs {launch.gpus_needed} GPUs, "
                f"{len(visible)} visible)"
            ],
            "gpus",
        )
    for fault in active:
        if fault.gpu in used:
            lines = list(fault.engine_log) or fault_lines(bool(fault.ecc_uncorrected), used.index(fault.gpu), fault.gpu)
            source = f"GPU {fault.gpu} fault"
            return used, crash(launch.engine, "init", lines, source, exit_code=fault.exit_code)
    return used, None
