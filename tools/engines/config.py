"""The typed engine launch configuration, shared by SGLang and vLLM.

Field names are engine-neutral (``mem_fraction`` is SGLang ``--mem-fraction-static`` and vLLM
``--gpu-memory-utilization``); the flag builders translate them for the installed release. Remedies
from diagnose_log name these fields (see ``tools/logs/signatures.toml``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EngineKind = Literal["sglang", "vllm"]
DEFAULT_PORTS: dict[str, int] = {"sglang": 30000, "vllm": 8000}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpeculativeOptions(_Strict):
    """Speculative decoding. For EAGLE-3 give the drafter and (optionally) the tree shape."""

    algorithm: Literal["EAGLE3", "EAGLE", "NEXTN", "STANDALONE", "NGRAM"] = "EAGLE3"
    draft_model_path: str | None = Field(None, description="Drafter directory or repo id (EAGLE: needed).")
    num_steps: int | None = Field(None, ge=1, le=16, description="Draft steps per verification.")
    eagle_topk: int | None = Field(None, ge=1, le=16, description="Branching per step; 1 = a chain.")
    num_draft_tokens: int | None = Field(None, ge=1, le=64, description="Tokens verified per step.")
    draft_attention_backend: str | None = Field(None, description="Attention backend of the draft (SGLang).")
    enable_spec_v2: bool | None = Field(
        None,
        description="SGLang < 0.5.19: set SGLANG_ENABLE_SPEC_V2=1 "
        "(overlap scheduler with topk 1). Ignored by later releases.",
    )

    @model_validator(mode="after")
    def _drafter_given(self) -> SpeculativeOptions:
        if self.algorithm in ("EAGLE3", "EAGLE", "STANDALONE") and not self.draft_model_path:
            raise ValueError(
                f"{self.algorithm} needs draft_model_path (a missing drafter makes SGLang load "
                "the target as its own draft)"
            )
        return self


class EngineLaunchConfig(_Strict):
    engine: EngineKind
    model_path: str = Field(description="Model directory or repo id.")
    served_model_name: str | None = None
    host: str = Field("127.0.0.1", description="Address the server binds to.")
    port: int | None = Field(None, ge=1, le=65535, description="Default: 30000 (SGLang), 8000 (vLLM).")
    tp_size: int = Field(1, ge=1)
    ep_size: int = Field(1, ge=1, description="Expert parallel size (vLLM: >1 enables expert parallelism).")
    dp_size: int = Field(1, ge=1)
    dp_attention: bool = Field(False, description="SGLang data-parallel attention across dp_size ranks.")
    mem_fraction: float | None = Field(None, gt=0.0, le=1.0)
    context_length: int | None = Field(None, ge=1)
    max_running_requests: int | None = Field(None, ge=1)
    attention_backend: str | None = Field(
        None,
        description="SGLang name (triton, flashinfer, fa3, ...) or a "
        "vLLM backend name; vLLM gets the MLA variant for MLA models.",
    )
    model_attention: Literal["mla", "mha"] | None = Field(
        None, description="Attention of the model; default: from its config.json (kv_lora_rank means MLA)."
    )
    disable_cuda_graph: bool = False
    cuda_graph_max_bs: int | None = Field(None, ge=1)
    kv_cache_dtype: str | None = None
    trust_remote_code: bool = False
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    disable_custom_all_reduce: bool = False
    enable_p2p_check: bool = Field(False, description="SGLang: test P2P instead of assuming it works.")
    enable_metrics: bool = False
    log_level: str | None = None
    speculative: SpeculativeOptions | None = None
    nnodes: int = Field(1, ge=1)
    node_rank: int = Field(0, ge=0)
    dist_init_addr: str | None = Field(None, description="host:port of node 0 for multi-node runs.")
    extra_flags: list[str] = Field(default_factory=list, description="Appended verbatim to the flags.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment, e.g. NCCL_P2P_DISABLE.")

    @model_validator(mode="after")
    def _multi_node_consistent(self) -> EngineLaunchConfig:
        if self.node_rank >= self.nnodes:
            raise ValueError(f"node_rank {self.node_rank} must be below nnodes {self.nnodes}")
        if self.nnodes > 1 and not self.dist_init_addr:
            raise ValueError("multi-node runs need dist_init_addr (host:port of node 0)")
        if self.dist_init_addr and ":" not in self.dist_init_addr:
            raise ValueError("dist_init_addr must be host:port")
        return self

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.engine]

    @property
    def probe_host(self) -> str:
        """Where the agent connects for health checks (a wildcard bind is reached on loopback)."""
        return "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
