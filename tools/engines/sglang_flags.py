"""SGLang flags by release (`python -m sglang.launch_server`, which every release listed accepts).

Version boundaries (from the SGLang 0.5.8 and 0.5.23 wheels, server_args.py and srt/arg_groups/):
- ``--cuda-graph-max-bs`` exists through 0.5.18; 0.5.23 replaced it by ``--cuda-graph-max-bs-decode`` /
  ``-prefill`` and the old spelling became an ambiguous prefix (argparse error). The first release
  without it lies between 0.5.19 and 0.5.23; releases in that gap get the old flag and a note.
- ``--disable-cuda-graph`` is deprecated in 0.5.23 in favour of ``--disable-decode-cuda-graph`` and
  ``--disable-prefill-cuda-graph``.
- ``--dp-size N --enable-dp-attention`` is deprecated in 0.5.23 in favour of ``--attn-dp-size N``.
- ``SGLANG_ENABLE_SPEC_V2`` exists in 0.5.8 and is no longer defined in 0.5.23's environ.py.
- Attention backends: 0.5.8 has no ``dsa``/``qsa``/``dsv4``/``cutedsl_mla``/``hpc_ops``; 0.5.23 dropped
  ``cutlass_mla`` and ``dual_chunk_flash_attn``.
- EAGLE with topk 1 forces draft tokens = steps + 1, and speculation caps max running requests at 48
  unless --max-running-requests is given (0.5.8 and 0.5.23).
"""

from __future__ import annotations

from tools.engines.command import EngineCommand, FlagError
from tools.engines.config import EngineLaunchConfig
from tools.engines.versions import Release, at_least

NEW_CLI = (0, 5, 23)
UNCERTAIN_FROM = (0, 5, 19)
BACKENDS_0_5_8 = frozenset(
    {
        "triton",
        "torch_native",
        "flex_attention",
        "nsa",
        "cutlass_mla",
        "fa3",
        "fa4",
        "flashinfer",
        "flashmla",
        "trtllm_mla",
        "trtllm_mha",
        "dual_chunk_flash_attn",
        "aiter",
        "wave",
        "intel_amx",
        "ascend",
        "intel_xpu",
    }
)
REMOVED_IN_0_5_23 = frozenset({"cutlass_mla", "dual_chunk_flash_attn"})


def _check_backend(backend: str | None, release: Release | None) -> None:
    if backend is None or release is None:
        return
    if release <= (0, 5, 8) and backend not in BACKENDS_0_5_8:
        version = ".".join(map(str, release))
        raise FlagError(
            f"attention backend {backend!r} is not offered by SGLang {version}; "
            f"choices: {', '.join(sorted(BACKENDS_0_5_8))}"
        )
    if release >= NEW_CLI and backend in REMOVED_IN_0_5_23:
        raise FlagError(f"attention backend {backend!r} was removed by SGLang 0.5.23")


def _cuda_graph_flags(config: EngineLaunchConfig, release: Release | None, notes: list[str]) -> list[str]:
    new = at_least(release, NEW_CLI)
    flags: list[str] = []
    if config.disable_cuda_graph:
        flags += ["--disable-decode-cuda-graph", "--disable-prefill-cuda-graph"] if new else ["--disable-cuda-graph"]
    if config.cuda_graph_max_bs is not None:
        flag = "--cuda-graph-max-bs-decode" if new else "--cuda-graph-max-bs"
        flags += [flag, str(config.cuda_graph_max_bs)]
        if not new and release is not None and release >= UNCERTAIN_FROM:
            notes.append(
                "--cuda-graph-max-bs was renamed somewhere between 0.5.19 and 0.5.23; if the engine "
                "rejects it, relaunch with engine_version 0.5.23"
            )
    return flags


def _speculative_flags(
    config: EngineLaunchConfig, release: Release | None, notes: list[str], env: dict[str, str]
) -> list[str]:
    options = config.speculative
    if options is None:
        return []
    flags = ["--speculative-algorithm", options.algorithm]
    if options.draft_model_path:
        flags += ["--speculative-draft-model-path", options.draft_model_path]
    draft_tokens = options.num_draft_tokens
    chain = options.num_steps + 1 if options.eagle_topk == 1 and options.num_steps is not None else None
    if chain is not None and draft_tokens not in (None, chain):
        notes.append(f"with topk 1 SGLang uses steps + 1 = {chain} draft tokens, not {draft_tokens}; passing {chain}")
        draft_tokens = chain
    for flag, value in (
        ("--speculative-num-steps", options.num_steps),
        ("--speculative-eagle-topk", options.eagle_topk),
        ("--speculative-num-draft-tokens", draft_tokens),
        ("--speculative-draft-attention-backend", options.draft_attention_backend),
    ):
        if value is not None:
            flags += [flag, str(value)]
    if config.max_running_requests is None:
        notes.append("speculative decoding caps max running requests at 48 unless it is set explicitly")
    if options.enable_spec_v2:
        if at_least(release, NEW_CLI):
            notes.append("SGLANG_ENABLE_SPEC_V2 no longer exists in SGLang 0.5.23; not set")
        else:
            env["SGLANG_ENABLE_SPEC_V2"] = "1"
    return flags


def build(config: EngineLaunchConfig, engine_python: str, release: Release | None) -> EngineCommand:
    _check_backend(config.attention_backend, release)
    notes: list[str] = []
    env: dict[str, str] = {}
    argv = [
        engine_python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        config.model_path,
        "--host",
        config.host,
        "--port",
        str(config.effective_port),
    ]
    if config.served_model_name:
        argv += ["--served-model-name", config.served_model_name]
    argv += ["--tp-size", str(config.tp_size)]
    if config.ep_size > 1:
        argv += ["--ep-size", str(config.ep_size)]
    if config.dp_attention and config.dp_size > 1:
        argv += (
            ["--attn-dp-size", str(config.dp_size)]
            if at_least(release, NEW_CLI)
            else ["--dp-size", str(config.dp_size), "--enable-dp-attention"]
        )
    elif config.dp_size > 1:
        argv += ["--dp-size", str(config.dp_size)]
    for flag, value in (
        ("--mem-fraction-static", config.mem_fraction),
        ("--context-length", config.context_length),
        ("--max-running-requests", config.max_running_requests),
        ("--attention-backend", config.attention_backend),
        ("--kv-cache-dtype", config.kv_cache_dtype),
        ("--tool-call-parser", config.tool_call_parser),
        ("--reasoning-parser", config.reasoning_parser),
        ("--log-level", config.log_level),
    ):
        if value is not None:
            argv += [flag, str(value)]
    argv += _cuda_graph_flags(config, release, notes)
    for flag, enabled in (
        ("--trust-remote-code", config.trust_remote_code),
        ("--disable-custom-all-reduce", config.disable_custom_all_reduce),
        ("--enable-p2p-check", config.enable_p2p_check),
        ("--enable-metrics", config.enable_metrics),
    ):
        if enabled:
            argv.append(flag)
    argv += _speculative_flags(config, release, notes, env)
    if config.nnodes > 1:
        argv += [
            "--nnodes",
            str(config.nnodes),
            "--node-rank",
            str(config.node_rank),
            "--dist-init-addr",
            str(config.dist_init_addr),
        ]
        if config.node_rank > 0:
            notes.append("ranks above 0 serve only /health; readiness is judged on node 0")
    return EngineCommand(argv=argv, env=env, notes=notes)
