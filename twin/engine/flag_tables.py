"""The launch flags of the real engines, as the stand-in parses them.

This table gives types and defaults for the flags the stand-in simulates; it does not decide which flags
a release accepts. That comes from the release data (``engine_facts/release_facts.json``), checked first
by :func:`twin.engine.flags.parse_flags`, so a flag the real release rejects is rejected here too.
SGLang names follow ``srt/server_args.py``, vLLM's ``engine/arg_utils.py``. A flag's first name is its
canonical name; rules in scenarios use canonical names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

FlagKind = Literal["str", "int", "float", "bool", "optbool", "ints", "strs"]
Version = tuple[int, ...]


@dataclass(frozen=True)
class FlagSpec:
    names: tuple[str, ...]
    kind: FlagKind = "str"
    default: Any = None

    @property
    def canonical(self) -> str:
        return self.names[0]


def _many(kind: FlagKind, *names: str) -> list[FlagSpec]:
    return [FlagSpec((name,), kind) for name in names]


SGLANG_FLAGS: list[FlagSpec] = [
    FlagSpec(("--model-path", "--model")),
    FlagSpec(("--host",), default="127.0.0.1"),
    FlagSpec(("--port",), "int", 30000),
    FlagSpec(("--tp-size", "--tensor-parallel-size"), "int", 1),
    FlagSpec(("--pp-size", "--pipeline-parallel-size"), "int", 1),
    FlagSpec(("--dp-size", "--data-parallel-size"), "int", 1),
    FlagSpec(("--ep-size", "--expert-parallel-size", "--ep"), "int", 1),
    FlagSpec(("--dist-init-addr", "--nccl-init-addr")),
    FlagSpec(("--speculative-draft-model-path", "--speculative-draft-model")),
    FlagSpec(("--log-level",), default="info"),
    FlagSpec(("--decode-log-interval",), "int", 40),
    FlagSpec(("--nnodes",), "int", 1),
    FlagSpec(("--node-rank",), "int", 0),
    FlagSpec(("--base-gpu-id",), "int", 0),
    FlagSpec(("--gpu-id-step",), "int", 1),
    FlagSpec(("--stream-interval",), "int", 1),
    FlagSpec(("--schedule-conservativeness",), "float", 1.0),
    FlagSpec(("--watchdog-timeout",), "float", 300.0),
    FlagSpec(("--cuda-graph-max-bs",), "int"),
    FlagSpec(("--cuda-graph-bs",), "ints"),
    FlagSpec(("--lora-paths",), "strs"),
    FlagSpec(("--attn-dp-size",), "int"),
    FlagSpec(("--cuda-graph-max-bs-decode",), "int"),
    FlagSpec(("--cuda-graph-max-bs-prefill",), "int"),
    FlagSpec(("--cuda-graph-backend-decode",)),
    FlagSpec(("--cuda-graph-backend-prefill",)),
    FlagSpec(("--cuda-graph-config",)),
    FlagSpec(("--config",)),
    FlagSpec(("--disable-decode-cuda-graph",), "bool", False),
    FlagSpec(("--disable-prefill-cuda-graph",), "bool", False),
    *_many(
        "str",
        "--tokenizer-path",
        "--tokenizer-mode",
        "--load-format",
        "--revision",
        "--model-impl",
        "--dtype",
        "--quantization",
        "--quantization-param-path",
        "--kv-cache-dtype",
        "--schedule-policy",
        "--device",
        "--served-model-name",
        "--chat-template",
        "--completion-template",
        "--file-storage-path",
        "--reasoning-parser",
        "--tool-call-parser",
        "--tool-server",
        "--load-balance-method",
        "--json-model-override-args",
        "--preferred-sampling-params",
        "--lora-backend",
        "--attention-backend",
        "--prefill-attention-backend",
        "--decode-attention-backend",
        "--sampling-backend",
        "--grammar-backend",
        "--mm-attention-backend",
        "--speculative-algorithm",
        "--speculative-draft-model-revision",
        "--speculative-draft-load-format",
        "--speculative-token-map",
        "--speculative-attention-mode",
        "--speculative-draft-attention-backend",
        "--speculative-moe-runner-backend",
        "--moe-a2a-backend",
        "--moe-runner-backend",
        "--init-expert-location",
        "--log-level-http",
        "--api-key",
        "--download-dir",
        "--torchao-config",
        "--kt-weight-path",
        "--kt-method",
        "--crash-dump-folder",
        "--hicache-storage-backend",
        "--fp8-gemm-backend",
        "--weight-loader-prefetch-checkpoints",
    ),
    *_many(
        "int",
        "--context-length",
        "--nccl-port",
        "--max-running-requests",
        "--max-queued-requests",
        "--max-total-tokens",
        "--chunked-prefill-size",
        "--max-prefill-tokens",
        "--page-size",
        "--max-micro-batch-size",
        "--random-seed",
        "--dist-timeout",
        "--max-loras-per-batch",
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--ep-num-redundant-experts",
        "--torch-compile-max-bs",
        "--num-continuous-decode-steps",
        "--triton-attention-num-kv-splits",
        "--kt-cpuinfer",
        "--kt-threadpool-count",
        "--kt-num-gpu-experts",
        "--cpu-offload-gb",
        "--tokenizer-worker-num",
        "--log-requests-level",
        "--warmups",
    ),
    *_many(
        "float",
        "--mem-fraction-static",
        "--speculative-accept-threshold-single",
        "--speculative-accept-threshold-acc",
    ),
    *_many(
        "bool",
        "--trust-remote-code",
        "--skip-tokenizer-init",
        "--is-embedding",
        "--skip-server-warmup",
        "--log-requests",
        "--show-time-cost",
        "--enable-metrics",
        "--enable-metrics-for-all-schedulers",
        "--enable-cache-report",
        "--enable-dp-attention",
        "--enable-dp-lm-head",
        "--enable-eplb",
        "--disable-radix-cache",
        "--disable-cuda-graph",
        "--disable-cuda-graph-padding",
        "--enable-profile-cuda-graph",
        "--enable-nccl-nvls",
        "--enable-symm-mem",
        "--disable-outlines-disk-cache",
        "--disable-custom-all-reduce",
        "--enable-mscclpp",
        "--disable-overlap-schedule",
        "--enable-mixed-chunk",
        "--enable-two-batch-overlap",
        "--enable-torch-compile",
        "--enable-nan-detection",
        "--enable-p2p-check",
        "--triton-attention-reduce-in-fp32",
        "--delete-ckpt-after-loading",
        "--enable-memory-saver",
        "--allow-auto-truncate",
        "--enable-custom-logit-processor",
        "--flashinfer-mla-disable-ragged",
        "--disable-shared-experts-fusion",
        "--disable-chunked-prefix-cache",
        "--enable-return-hidden-states",
        "--enable-deterministic-inference",
        "--disable-fast-image-processor",
        "--enable-hierarchical-cache",
        "--sleep-on-idle",
        "--stream-output",
        "--enable-request-time-stats-logging",
        "--enable-lora",
        "--enable-layerwise-nvtx-marker",
        "--enable-expert-distribution-metrics",
    ),
]

VLLM_FLAGS: list[FlagSpec] = [
    FlagSpec(("--model",)),
    FlagSpec(("--tensor-parallel-size", "-tp"), "int", 1),
    FlagSpec(("--pipeline-parallel-size", "-pp"), "int", 1),
    FlagSpec(("--data-parallel-size", "-dp"), "int", 1),
    FlagSpec(("--enable-expert-parallel", "-ep"), "bool", False),
    FlagSpec(("--gpu-memory-utilization",), "float", 0.92),
    FlagSpec(("--quantization", "-q")),
    FlagSpec(("--compilation-config", "-O")),
    FlagSpec(("--speculative-config", "-sc")),
    FlagSpec(("--host",), default="127.0.0.1"),
    FlagSpec(("--port",), "int", 8000),
    FlagSpec(("--served-model-name",), "strs"),
    FlagSpec(("--enable-prefix-caching",), "optbool"),
    FlagSpec(("--enable-chunked-prefill",), "optbool"),
    FlagSpec(("--async-scheduling",), "optbool"),
    *_many(
        "str",
        "--kv-cache-dtype",
        "--attention-backend",
        "--distributed-executor-backend",
        "--tool-call-parser",
        "--reasoning-parser",
        "--dtype",
        "--generation-config",
        "--tokenizer",
        "--revision",
        "--download-dir",
        "--load-format",
        "--api-key",
        "--chat-template",
        "--uvicorn-log-level",
        "--limit-mm-per-prompt",
        "--mm-encoder-tp-mode",
        "--hf-overrides",
        "--kv-transfer-config",
        "--tokenizer-mode",
        "--all2all-backend",
        "--safetensors-load-strategy",
        "--override-generation-config",
        "--master-addr",
    ),
    *_many(
        "int",
        "--max-model-len",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--seed",
        "--block-size",
        "--max-logprobs",
        "--api-server-count",
        "--data-parallel-size-local",
        "--max-cudagraph-capture-size",
        "--nnodes",
        "--node-rank",
        "--master-port",
    ),
    *_many("float", "--swap-space", "--cpu-offload-gb"),
    *_many(
        "bool",
        "--enforce-eager",
        "--disable-custom-all-reduce",
        "--trust-remote-code",
        "--enable-auto-tool-choice",
        "--disable-log-stats",
        "--disable-log-requests",
        "--enable-log-requests",
        "--enable-eplb",
        "--disable-uvicorn-access-log",
        "--headless",
        "--enable-sleep-mode",
    ),
]


def parse_version(text: str | None) -> Version:
    """Leading numeric release parts of a version string: '0.5.10.post1' -> (0, 5, 10)."""
    parts: list[int] = []
    for piece in (text or "0").replace("+", ".").replace("-", ".").split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    return tuple(parts) or (0,)


def flag_table(engine: str) -> list[FlagSpec]:
    return SGLANG_FLAGS if engine == "sglang" else VLLM_FLAGS
