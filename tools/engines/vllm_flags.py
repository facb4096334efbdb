"""vLLM flags by release, run as ``vllm serve`` from the engine environment (the console script next to
the engine interpreter, so the right environment runs).

Flag names follow vLLM 0.33 (engine/arg_utils.py, config/speculative.py). Older releases:
- before 0.8 the ``vllm`` console script and ``--speculative-config`` did not exist; the OpenAI server
  module (``vllm.entrypoints.openai.api_server --model``) and ``--speculative-model`` /
  ``--num-speculative-tokens`` are used instead;
- before 0.11 the attention backend was chosen with ``VLLM_ATTENTION_BACKEND`` (no flag).
CUDA-graph batch sizes go through ``--compilation-config {"cudagraph_capture_sizes": [...]}``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tools.engines.command import EngineCommand
from tools.engines.config import EngineLaunchConfig
from tools.engines.versions import Release, at_least

CLI_MAIN = (0, 8, 0)
ATTENTION_FLAG = (0, 11, 0)
BACKEND_NAMES = {
    "triton": "TRITON_ATTN",
    "flashinfer": "FLASHINFER",
    "fa3": "FLASH_ATTN",
    "flash_attn": "FLASH_ATTN",
    "flashmla": "FLASHMLA",
}
SPECULATIVE_METHODS = {
    "EAGLE3": "eagle3",
    "EAGLE": "eagle",
    "NEXTN": "mtp",
    "STANDALONE": "draft_model",
    "NGRAM": "ngram",
}


def capture_sizes(max_batch: int) -> list[int]:
    """vLLM's default shape of capture sizes (1, 2, 4, then steps of 8), cut at max_batch."""
    sizes = [size for size in (1, 2, 4) if size <= max_batch]
    sizes += list(range(8, max_batch + 1, 8))
    return sizes or [1]


def _speculative_flags(config: EngineLaunchConfig, release: Release | None, notes: list[str]) -> list[str]:
    options = config.speculative
    if options is None:
        return []
    tokens = options.num_steps or (options.num_draft_tokens - 1 if options.num_draft_tokens else None) or 3
    if options.eagle_topk not in (None, 1):
        notes.append("vLLM drafts a chain; eagle_topk > 1 is not applied")
    if not at_least(release, CLI_MAIN):
        flags = ["--num-speculative-tokens", str(tokens)]
        return (["--speculative-model", options.draft_model_path] if options.draft_model_path else []) + flags
    spec: dict[str, object] = {"method": SPECULATIVE_METHODS[options.algorithm], "num_speculative_tokens": tokens}
    if options.draft_model_path:
        spec["model"] = options.draft_model_path
    return ["--speculative-config", json.dumps(spec)]


def build(config: EngineLaunchConfig, engine_python: str, release: Release | None) -> EngineCommand:
    notes: list[str] = []
    env: dict[str, str] = {}
    if at_least(release, CLI_MAIN):
        argv = [str(Path(engine_python).with_name("vllm")), "serve", config.model_path]
    else:
        argv = [engine_python, "-m", "vllm.entrypoints.openai.api_server", "--model", config.model_path]
    argv += ["--host", config.host, "--port", str(config.effective_port), "--tensor-parallel-size", str(config.tp_size)]
    if config.served_model_name:
        argv += ["--served-model-name", config.served_model_name]
    if config.dp_size > 1:
        argv += ["--data-parallel-size", str(config.dp_size)]
    if config.ep_size > 1:
        argv.append("--enable-expert-parallel")
        if config.ep_size != config.tp_size * config.dp_size:
            notes.append(
                f"vLLM's expert-parallel size is tp x dp = {config.tp_size * config.dp_size}, not {config.ep_size}"
            )
    if config.dp_attention:
        notes.append("vLLM has no DP-attention switch; data parallelism with expert parallelism is the same")
    for flag, value in (
        ("--gpu-memory-utilization", config.mem_fraction),
        ("--max-model-len", config.context_length),
        ("--max-num-seqs", config.max_running_requests),
        ("--kv-cache-dtype", config.kv_cache_dtype),
        ("--reasoning-parser", config.reasoning_parser),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if config.tool_call_parser:
        argv += ["--tool-call-parser", config.tool_call_parser, "--enable-auto-tool-choice"]
    if config.attention_backend:
        backend = BACKEND_NAMES.get(config.attention_backend, config.attention_backend)
        if at_least(release, ATTENTION_FLAG):
            argv += ["--attention-backend", backend]
        else:
            env["VLLM_ATTENTION_BACKEND"] = backend
    if config.disable_cuda_graph:
        argv.append("--enforce-eager")
    elif config.cuda_graph_max_bs is not None:
        argv += [
            "--compilation-config",
            json.dumps({"cudagraph_capture_sizes": capture_sizes(config.cuda_graph_max_bs)}),
        ]
    for flag, enabled in (
        ("--trust-remote-code", config.trust_remote_code),
        ("--disable-custom-all-reduce", config.disable_custom_all_reduce),
    ):
        if enabled:
            argv.append(flag)
    if config.enable_p2p_check:
        notes.append("enable_p2p_check is an SGLang option; vLLM checks P2P itself")
    if config.log_level:
        env["VLLM_LOGGING_LEVEL"] = config.log_level.upper()
    argv += _speculative_flags(config, release, notes)
    if config.nnodes > 1:
        host, _, port = str(config.dist_init_addr).rpartition(":")
        argv += [
            "--nnodes",
            str(config.nnodes),
            "--node-rank",
            str(config.node_rank),
            "--master-addr",
            host,
            "--master-port",
            port,
        ]
        if config.node_rank > 0:
            argv.append("--headless")
        notes.append("multi-node without Ray needs a vLLM release with --nnodes (0.33 has it)")
    return EngineCommand(argv=argv, env=env, notes=notes)
