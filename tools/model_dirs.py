"""Model directories as the probe reports them: what the facts script found, as :class:`ModelInfo`, with the
figures memory planning needs (KV-cache bytes per token, the longest context)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.records import ModelInfo

GIB = 1024**3


def gib(value: object) -> float | None:
    return round(value / GIB, 1) if isinstance(value, int | float) and value else None


def _model_gib(value: object) -> float | None:
    """Weights in GiB to the MiB: small models must not round to nothing in memory arithmetic."""
    return round(value / GIB, 3) if isinstance(value, int | float) and value else None


def describe_models(found: object) -> list[ModelInfo]:
    """Model directories reported by the facts script (``OPSLOOP_MODEL_DIRS``), as ModelInfo."""
    models: list[ModelInfo] = []
    for item in found if isinstance(found, list) else []:
        config = item.get("config") if isinstance(item, dict) else None
        if not isinstance(config, dict):
            continue
        architecture = str((config.get("architectures") or [""])[0]) or None
        quantization = config.get("quantization_config")
        positions = config.get("max_position_embeddings")
        models.append(
            ModelInfo(
                name=Path(str(item.get("path"))).name,
                path=str(item.get("path")),
                size_gib=_model_gib(item.get("size_bytes")),
                architecture=architecture,
                num_layers=config.get("num_hidden_layers"),
                num_experts=config.get("n_routed_experts") or config.get("num_experts"),
                attention="mla" if config.get("kv_lora_rank") else None,
                quantization=quantization.get("quant_method") if isinstance(quantization, dict) else None,
                role="drafter" if architecture and "Eagle" in architecture else "target",
                kv_bytes_per_token=kv_bytes_per_token(config),
                max_context=positions if isinstance(positions, int) else None,
            )
        )
    return models


_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "float8_e4m3fn": 1}


def kv_bytes_per_token(config: dict[str, Any]) -> int | None:
    """K and V for one token: 2 x layers x KV heads x head dim x bytes per value (None for MLA or gaps)."""
    if config.get("kv_lora_rank"):
        return None
    layers, heads = config.get("num_hidden_layers"), config.get("num_attention_heads")
    kv_heads = config.get("num_key_value_heads") or heads
    hidden = config.get("hidden_size")
    head_dim = config.get("head_dim") or (
        hidden // heads if isinstance(hidden, int) and isinstance(heads, int) else None
    )
    width = _DTYPE_BYTES.get(str(config.get("torch_dtype") or config.get("dtype") or "bfloat16"), 2)
    if not (isinstance(layers, int) and isinstance(kv_heads, int) and isinstance(head_dim, int)):
        return None
    return 2 * layers * kv_heads * head_dim * width if min(layers, kv_heads, head_dim) > 0 else None
