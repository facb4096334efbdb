"""One launch, as the engine understands it: parsed flags with the engine's defaults resolved."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from twin.engine.flags import ParsedFlags
from twin.rules import LaunchFacts
from twin.scenario import Scenario

EAGLE_ALGORITHMS = {"EAGLE", "EAGLE3"}


class LaunchError(Exception):
    """A command line the real engine rejects before starting (argparse-style, exit status 2)."""


@dataclass
class SpecRequest:
    algorithm: str
    draft_path: str | None
    steps: int
    topk: int
    draft_tokens: int
    notes: list[str] = field(default_factory=list)  # log lines about adjusted parameters


@dataclass
class LaunchConfig:
    engine: str
    version: str
    parsed: ParsedFlags
    model_path: str
    served_name: str
    port: int
    tp_size: int
    gpus_needed: int
    base_gpu: int
    attention_backend: str
    attention_defaulted: bool
    memory_fraction: float
    cuda_graph: bool
    cuda_graph_max_bs: int
    chunked_prefill_size: int
    max_running_requests: int
    max_running_explicit: bool
    enable_metrics: bool
    decode_log_interval: int
    context_length: int
    speculative: SpecRequest | None
    nnodes: int = 1  # a multi-node launch: gpus_needed is per node, the weights split over all of them

    def facts(self, env: Mapping[str, str], attempt: int = 1, host_seconds: float = 0.0) -> LaunchFacts:
        flags = dict(self.parsed.values)
        key = "--mem-fraction-static" if self.engine == "sglang" else "--gpu-memory-utilization"
        flags.update({"--attention-backend": self.attention_backend, key: self.memory_fraction})
        if self.engine == "sglang":
            flags["--tp-size"] = self.tp_size
        return LaunchFacts(
            engine=self.engine,
            flags=flags,
            explicit=self.parsed.explicit,
            env=env,
            speculative=self.speculative is not None,
            attempt=attempt,
            host_seconds=host_seconds,
        )


def default_attention(engine: str, scenario: Scenario, capability: str) -> str:
    """The engine's choice when no backend is named.

    SGLang 0.5.8 server_args.py:1634-1698 (MLA: fa3 on Hopper, flashinfer on SM100, triton elsewhere);
    vLLM 0.33 platform selection (TRITON_MLA where FlashMLA/CUTLASS MLA do not run).
    """
    if scenario.engine.default_attention_backend:
        return scenario.engine.default_attention_backend
    major = int(capability.split(".")[0]) if capability else 0
    mla = scenario.model.attention == "mla"
    if engine == "vllm":
        if mla:
            return {9: "FLASHMLA", 10: "CUTLASS_MLA"}.get(major, "TRITON_MLA")
        return "FLASH_ATTN" if major in (8, 9) else "FLASHINFER"
    if capability == "9.0":
        return "fa3"
    if major == 10:
        return "flashinfer" if mla else "trtllm_mha"
    return "triton" if mla else "flashinfer"


def _sglang_spec(values: dict[str, Any], scenario: Scenario) -> SpecRequest | None:
    algorithm = values.get("--speculative-algorithm")
    if not algorithm:
        return None
    algorithm = "EAGLE" if algorithm.upper() == "NEXTN" else algorithm.upper()
    auto = (3, 1, 4) if scenario.model.attention == "mla" else (5, 4, 8)  # auto_choose_speculative_params
    steps = values.get("--speculative-num-steps") or auto[0]
    topk = values.get("--speculative-eagle-topk") or auto[1]
    draft_tokens = values.get("--speculative-num-draft-tokens") or auto[2]
    notes = []
    if topk == 1 and draft_tokens != steps + 1:
        draft_tokens = steps + 1
        notes.append(
            "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
        )
    return SpecRequest(algorithm, values.get("--speculative-draft-model-path"), steps, topk, draft_tokens, notes)


def _vllm_spec(values: dict[str, Any]) -> SpecRequest | None:
    text = values.get("--speculative-config")
    if not text:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise LaunchError(f"argument --speculative-config/-sc: invalid loads value: {text!r} ({error})") from None
    if not isinstance(config, dict):
        raise LaunchError("argument --speculative-config/-sc: expected a JSON object")
    method = str(config.get("method") or "").upper()
    steps = int(config.get("num_speculative_tokens") or 3)
    return SpecRequest(method or "EAGLE3", config.get("model"), steps, 1, steps + 1)


def build_launch(
    engine: str,
    version: str,
    parsed: ParsedFlags,
    scenario: Scenario,
    env: Mapping[str, str],
    capability: str,
) -> LaunchConfig:
    values = parsed.values
    if engine == "sglang":
        spec = _sglang_spec(values, scenario)
        explicit_backend = values.get("--attention-backend")
        tp = values["--tp-size"]
        dp_replicas = 1 if values.get("--enable-dp-attention") else values["--dp-size"]
        fraction = values.get("--mem-fraction-static") or scenario.engine.default_mem_fraction_static
        cuda_graph = not (values.get("--disable-cuda-graph") or values.get("--disable-decode-cuda-graph"))
        bs_values = values.get("--cuda-graph-bs") or []
        graph_bs = (
            values.get("--cuda-graph-max-bs")
            or values.get("--cuda-graph-max-bs-decode")
            or (max(bs_values) if bs_values else scenario.engine.default_cuda_graph_max_bs)
        )
        served = values.get("--served-model-name") or values["--model-path"]
        running = values.get("--max-running-requests")
        model_path, port, pp = values["--model-path"], values["--port"], values["--pp-size"]
        chunked = values.get("--chunked-prefill-size") or scenario.engine.default_chunked_prefill_size
        context = values.get("--context-length") or scenario.model.context_length
        metrics, interval, base_gpu = (
            values["--enable-metrics"],
            values["--decode-log-interval"],
            values["--base-gpu-id"],
        )
    else:
        spec = _vllm_spec(values)
        explicit_backend = values.get("--attention-backend") or env.get("VLLM_ATTENTION_BACKEND")
        tp, pp, dp_replicas = (
            values["--tensor-parallel-size"],
            values["--pipeline-parallel-size"],
            values["--data-parallel-size"],
        )
        fraction = values["--gpu-memory-utilization"]
        cuda_graph = not values["--enforce-eager"]
        graph_bs = values.get("--max-cudagraph-capture-size") or scenario.engine.default_cuda_graph_max_bs
        names = values.get("--served-model-name")
        served = names[0] if names else values["--model"]
        running = values.get("--max-num-seqs")
        model_path, port = values["--model"], values["--port"]
        chunked = values.get("--max-num-batched-tokens") or scenario.engine.default_chunked_prefill_size
        context = values.get("--max-model-len") or scenario.model.context_length
        metrics, interval, base_gpu = True, 0, 0
    nodes = int(values.get("--nnodes") or 1)
    backend = explicit_backend or default_attention(engine, scenario, capability)
    cap = running or scenario.performance.max_running_requests
    if spec is not None and engine == "sglang" and running is None:
        cap = 48
        spec.notes.append(
            "Max running requests is reset to 48 for speculative decoding. You can override this "
            "by explicitly setting --max-running-requests."
        )
    return LaunchConfig(
        engine=engine,
        version=version,
        parsed=parsed,
        model_path=model_path,
        served_name=served,
        port=port,
        tp_size=tp,
        gpus_needed=max(tp * pp * dp_replicas // nodes, 1),  # per node: a multi-node launch splits its ranks
        base_gpu=base_gpu,
        attention_backend=backend,
        attention_defaulted=explicit_backend is None,
        memory_fraction=fraction,
        cuda_graph=cuda_graph,
        cuda_graph_max_bs=graph_bs,
        chunked_prefill_size=chunked,
        max_running_requests=cap,
        max_running_explicit=running is not None,
        enable_metrics=metrics,
        decode_log_interval=interval,
        context_length=context,
        speculative=spec,
        nnodes=nodes,
    )
