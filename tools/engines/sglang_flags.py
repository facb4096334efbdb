"""SGLang flags for the installed release (``python -m sglang.launch_server``, present in every release read).

Each version-dependent spelling is chosen by what the release accepts (docs/engines.md lists the
boundaries found in the releases): the CUDA-graph cap (``--cuda-graph-max-bs-decode`` from 0.5.14, the old
``--cuda-graph-max-bs`` through 0.5.19), turning graphs off (``--disable-decode-cuda-graph`` /
``--disable-prefill-cuda-graph`` from 0.5.14), DP attention (``--attn-dp-size`` from 0.5.22), attention
backend choices, and ``SGLANG_ENABLE_SPEC_V2`` (read through 0.5.13). EAGLE with topk 1 forces draft tokens
= steps + 1, and speculation caps max running requests at 48 unless --max-running-requests is given.
"""

from __future__ import annotations

from engine_facts.accepted_flags import FlagSet
from tools.engines.command import EngineCommand
from tools.engines.config import EngineLaunchConfig
from tools.engines.flag_choice import Chooser

SPEC_V2 = "SGLANG_ENABLE_SPEC_V2"


def _cuda_graph(config: EngineLaunchConfig, chooser: Chooser) -> list[str]:
    flags: list[str] = []
    if config.disable_cuda_graph:
        if chooser.flags.accepts("--disable-decode-cuda-graph") and chooser.flags.accepts(
            "--disable-prefill-cuda-graph"
        ):
            chooser.choose(
                "disable CUDA graphs",
                "--disable-decode-cuda-graph --disable-prefill-cuda-graph",
                f"{chooser.engine} has per-phase switches; --disable-cuda-graph is deprecated there",
            )
            flags += ["--disable-decode-cuda-graph", "--disable-prefill-cuda-graph"]
        elif chooser.pick("disable CUDA graphs", "--disable-cuda-graph"):
            flags.append("--disable-cuda-graph")
    if config.cuda_graph_max_bs is not None:
        flag = chooser.pick("CUDA-graph batch cap", "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs")
        if flag:
            flags += [flag, str(config.cuda_graph_max_bs)]
    return flags


def _speculative(config: EngineLaunchConfig, chooser: Chooser) -> list[str]:
    options = config.speculative
    if options is None:
        return []
    notes = chooser.command.notes
    chooser.check_choice("--speculative-algorithm", options.algorithm)
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
        if value is not None and chooser.pick(f"speculative option {flag}", flag):
            flags += [flag, str(value)]
    if config.max_running_requests is None:
        notes.append("speculative decoding caps max running requests at 48 unless it is set explicitly")
    if options.enable_spec_v2:
        known = chooser.env_known(SPEC_V2, declared_in="sglang/srt/environ.py")
        if known is False:
            chooser.choose(
                "spec v2 overlap scheduler",
                "not set",
                f"{chooser.engine} does not declare {SPEC_V2} in sglang/srt/environ.py (removed in "
                "0.5.14; 0.5.14-0.5.20 only warn that it is gone; spec v2 is always on)",
            )
        else:
            chooser.command.env[SPEC_V2] = "1"
            chooser.choose(
                "spec v2 overlap scheduler",
                f"{SPEC_V2}=1",
                f"{chooser.engine} reads {SPEC_V2} (sglang/srt/environ.py)"
                if known
                else f"whether {chooser.engine} reads {SPEC_V2} is unknown; setting it is harmless",
            )
    return flags


def _parallel(config: EngineLaunchConfig, chooser: Chooser) -> list[str]:
    argv = ["--tp-size", str(config.tp_size)]
    if config.ep_size > 1:
        argv += ["--ep-size", str(config.ep_size)]
    if config.dp_attention and config.dp_size > 1:
        if chooser.flags.accepts("--attn-dp-size"):
            chooser.choose(
                "DP attention",
                "--attn-dp-size",
                f"{chooser.engine} accepts --attn-dp-size{chooser.where(chooser.flags.flag('--attn-dp-size'))}"
                "; --dp-size with --enable-dp-attention is deprecated there",
            )
            argv += ["--attn-dp-size", str(config.dp_size)]
        elif chooser.pick("DP attention", "--enable-dp-attention"):
            argv += ["--dp-size", str(config.dp_size), "--enable-dp-attention"]
    elif config.dp_size > 1:
        argv += ["--dp-size", str(config.dp_size)]
    if config.nnodes > 1:
        for flag in ("--nnodes", "--node-rank", "--dist-init-addr"):
            chooser.pick("multi-node", flag)
        argv += [
            "--nnodes",
            str(config.nnodes),
            "--node-rank",
            str(config.node_rank),
            "--dist-init-addr",
            str(config.dist_init_addr),
        ]
        if config.node_rank > 0:
            chooser.command.notes.append("ranks above 0 serve only /health; readiness is judged on node 0")
    return argv


def build(config: EngineLaunchConfig, engine_python: str, flags: FlagSet) -> EngineCommand:
    command = EngineCommand(argv=[], entry_point=f"{engine_python} -m sglang.launch_server")
    chooser = Chooser(flags, command)
    if config.attention_backend:
        chooser.check_choice("--attention-backend", config.attention_backend)
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
    argv += _parallel(config, chooser)
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
    argv += _cuda_graph(config, chooser)
    for flag, enabled in (
        ("--trust-remote-code", config.trust_remote_code),
        ("--disable-custom-all-reduce", config.disable_custom_all_reduce),
        ("--enable-p2p-check", config.enable_p2p_check),
        ("--enable-metrics", config.enable_metrics),
    ):
        if enabled:
            argv.append(flag)
    argv += _speculative(config, chooser)
    command.argv = argv
    return chooser.finish()
