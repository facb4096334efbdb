"""vLLM attention backend names for a model and GPU, from the release data's backend list.

MLA models (DeepSeek-V3 layout, Kimi) need the MLA backends (``TRITON_MLA``, ``FLASHMLA``,
``FLASHINFER_MLA``, ``CUTLASS_MLA``, ``FLASH_ATTN_MLA``); each backend's ``supports_compute_capability``
as read from the release decides which GPU generations it accepts (on SM120 only ``TRITON_MLA``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from engine_facts.release_facts import BackendFact

GENERIC: dict[str, dict[str, tuple[str, ...]]] = {
    "mla": {
        "triton": ("TRITON_MLA", "TRITON_MLA_VLLM_V1"),
        "flashinfer": ("FLASHINFER_MLA",),
        "flashmla": ("FLASHMLA", "FLASHMLA_VLLM_V1"),
        "cutlass_mla": ("CUTLASS_MLA",),
        "fa3": ("FLASH_ATTN_MLA",),
        "flash_attn": ("FLASH_ATTN_MLA",),
    },
    "mha": {
        "triton": ("TRITON_ATTN", "TRITON_ATTN_VLLM_V1"),
        "flashinfer": ("FLASHINFER", "FLASHINFER_VLLM_V1"),
        "fa3": ("FLASH_ATTN", "FLASH_ATTN_VLLM_V1"),
        "flash_attn": ("FLASH_ATTN", "FLASH_ATTN_VLLM_V1"),
    },
}
MLA_NAMES = re.compile(r"deepseek|kimi|moonlight|glm-?5", re.IGNORECASE)


def model_attention(model_path: str, declared: Literal["mla", "mha"] | None) -> tuple[Literal["mla", "mha"], str]:
    """(kind, how it was decided): the declared kind, the model's config.json, else its name."""
    if declared is not None:
        return declared, "given in the config"
    config_file = Path(model_path).expanduser() / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = None
    if isinstance(config, dict):
        text_config = config.get("text_config")
        inner: dict[str, Any] = text_config if isinstance(text_config, dict) else {}
        found = "kv_lora_rank" in config or "kv_lora_rank" in inner
        return ("mla" if found else "mha"), f"{config_file} {'has' if found else 'has no'} kv_lora_rank"
    if MLA_NAMES.search(model_path):
        return "mla", "the model name is a DeepSeek/Kimi-style MLA model (no config.json to read)"
    return "mha", "no config.json to read; assumed standard attention"


def resolve_backend(wanted: str, kind: str, backends: dict[str, BackendFact]) -> tuple[str | None, str]:
    """(vLLM backend name or None, reason). Lower-case engine-neutral names (triton, flashinfer, ...) are
    mapped to the variant for the model's attention; an upper-case vLLM name is taken as written."""
    if wanted.upper() in backends and not (wanted.islower() and wanted in GENERIC.get(kind, {})):
        name = wanted.upper()
        fact = backends[name]
        if kind == "mla" and not fact.mla:
            return None, f"{name} is not an MLA backend; this MLA model needs one of {mla_names(backends)}"
        return name, f"{name} is a backend of this release ({fact.source})"
    candidates = GENERIC.get(kind, {}).get(wanted.lower(), ())
    for name in candidates:
        if name in backends:
            return name, f"{wanted} for an {kind.upper()} model is {name} in this release ({backends[name].source})"
    if not candidates:
        names = mla_names(backends) if kind == "mla" else sorted(backends)
        return None, f"no vLLM backend corresponds to {wanted!r}; name one of {names}"
    return None, f"none of {', '.join(candidates)} exists in this release"


def mla_names(backends: dict[str, BackendFact]) -> list[str]:
    return sorted(name for name, fact in backends.items() if fact.mla and fact.capability_majors is not None)


def capability_problem(name: str, capability: str | None, backends: dict[str, BackendFact]) -> str | None:
    """Why the backend refuses this GPU (None when it accepts it or nothing is known)."""
    fact = backends.get(name)
    if capability is None or fact is None or fact.capability_majors is None:
        return None
    major = int(capability.split(".")[0])
    if major in fact.capability_majors:
        return None
    fits = sorted(
        other
        for other, item in backends.items()
        if item.mla == fact.mla and item.capability_majors and major in item.capability_majors
    )
    return (
        f"{name} accepts compute capability {', '.join(map(str, fact.capability_majors))}.x only, not "
        f"{capability} ({fact.source}); backends of this kind that accept it: {', '.join(fits) or 'none'}"
    )
