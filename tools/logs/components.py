"""Which part of an engine a stack frame belongs to, and which part of the engine failed.

Frames are matched by file path and function name against a table of the engines' own module
layout (SGLang ``srt/...``, vLLM ``vllm/...``, PyTorch, NCCL). :func:`failing_component` looks at the
innermost frames of an error and names the component that explains it; a component that wraps the
others (CUDA graph capture, speculative decoding) wins over the kernel it was running, because its
remedy is what changes the outcome.
"""

from __future__ import annotations

import re
from typing import Literal

from tools.logs.frames import Frame

Component = Literal[
    "cuda_graph",
    "speculative",
    "quantization",
    "weight_loader",
    "kv_cache",
    "distributed",
    "attention",
    "model_config",
    "tokenizer",
    "engine_args",
    "warmup",
    "http_server",
    "scheduler",
    "compile",
    "sampling",
    "model",
]

# (component, path pattern, function pattern); the first row that matches a frame names it.
_TABLE: list[tuple[Component, str, str]] = [
    (
        "cuda_graph",
        r"cuda_graph_runner|torch/cuda/graphs\.py|cudagraph|graph_runner",
        # Capture functions by name only: other libraries have "capture_*" functions too (uvicorn's
        # capture_signals, which every Ctrl-C of an API server passes through).
        # vLLM's profile_cudagraph_memory only measures: a capture it runs shows capture frames inside it.
        r"^(?:capture(?:_model|_one_batch_size|_begin|_end)?|_?capture_\w*graphs?\w*|(?!profile_)\w*cuda_?graphs?\w*"
        r"|init_device_graphs)$",
    ),
    (
        "speculative",
        r"/speculative/|/spec_decode/|eagle|medusa|/draft|_mtp|proposer|ngram_worker|config/speculative"
        r"|rejection_sampl",
        r"draft|eagle|speculative|propose",
    ),
    ("quantization", r"/quantization/|fp8|marlin|awq|gptq|w8a8|modelopt|compressed_tensors|mxfp4", r"quant"),
    (
        "weight_loader",
        r"/model_loader/|weight_utils|safetensors|/loader\.py",
        r"^(?:load_weights|_load_weights|load_model|weight_loader|_load_module|\w*weights_iterator|get_model"
        r"|load_weights_and_postprocess)$",
    ),
    (
        "kv_cache",
        r"kv_cache|mem_cache|memory_pool|allocator|block_manager|cache_engine",
        r"kv_cache|memory_pool|profile_max_num_token|determine_available_memory|alloc_|init_memory_pool",
    ),
    (
        "distributed",
        # torch's launcher (torchrun, elastic) lives under torch/distributed/ too; it only reports its children.
        r"/distributed/(?!run\.py|elastic/|launcher/|kv_transfer/)|pynccl|pyhccl|parallel_state|device_communicators|custom_all_reduce"
        r"|libnccl|ProcessGroupNCCL|c10d",
        r"nccl|all_reduce|allreduce|all_gather|broadcast|recv_object|send_object|init_process_group"
        r"|ProcessGroupNCCL|Watchdog",
    ),
    (
        "attention",
        r"/attention/|flashinfer/(?:prefill|decode|attention|mla|cascade|sparse|pod)|flashinfer_backend|flash_attn"
        r"|flashmla|/fa3|triton_backend|xformers",
        r"^(?:begin_forward|plan|forward_decode|forward_extend_attn)$",
    ),
    (
        "model_config",
        r"transformers_utils/config|models/registry|configuration_utils|models/auto/configuration_auto|huggingface_hub"
        r"|hf_transformers_utils",
        r"^(?:get_config|_try_inspect\w*)$",
    ),
    # Loading the model's tokenizer (vLLM's tokenizer registry, transformers' tokenizer classes, SGLang's
    # get_tokenizer).
    (
        "tokenizer",
        r"/tokenizers/(?:registry|hf)\.py|transformers/tokenization_|models/auto/tokenization_auto",
        r"^(?:get_tokenizer|cached_get_tokenizer|\w*tokenizer_from_config)$",
    ),
    # The engine's own checks of its arguments and of their combination (vLLM's EngineArgs and config
    # classes, SGLang's ServerArgs) ...
    # ... and of the environment variables they read (vLLM's envs.py, its parsers of *_ENV settings), and the
    # configuration of its logging from them (a level or a configuration file the settings name).
    (
        "engine_args",
        r"arg_utils|server_args|vllm/config(?:\.py|/)|/argparse\.py|vllm/envs\.py",
        r"^(?:_?parse\w*_env(?:_\w+)?|_?configure\w*_logg\w*|dictConfig|fileConfig|configure_handler|_checkLevel)$",
    ),
    # The engine's own warm-up once the model is loaded (vLLM's kernel warm-up and its CPU runner's warming_up_model,
    # SGLang's warm-up request).
    (
        "warmup",
        r"/warmup/|/warmup\.py|kernel_warmup",
        r"^(?:kernel_warmup|compile_or_warm_up_model|\w*_warmup(?:_\w+)?|warmup_\w+|warming_up_\w+|_wait_and_warmup"
        r"|_execute_server_warmup|_dummy_sampler_run)$",
    ),
    ("http_server", r"entrypoints|http_server|api_server|uvicorn|starlette|fastapi", r"^$"),
    ("compile", r"torch/_dynamo|torch/_inductor|/compilation/", r"^$"),
    ("sampling", r"sampl|penaltylib|logits_processor", r"^$"),
    (
        "scheduler",
        r"managers/scheduler|/core/sched|v1/engine/core\.py|tp_worker|model_runner|(?<!model_)executor",
        r"^$",
    ),
    ("model", r"/models/", r"^forward$"),
]
_COMPILED = [(name, re.compile(path), re.compile(function)) for name, path, function in _TABLE]
# Components that explain an error wherever they appear among the innermost frames.
_WRAPPERS: tuple[Component, ...] = ("cuda_graph", "speculative")
# Otherwise the innermost frame with one of these decides.
_LEAVES: tuple[Component, ...] = (
    "quantization",
    "weight_loader",
    "kv_cache",
    "distributed",
    "attention",
    "model_config",
    "tokenizer",
    "engine_args",
    "warmup",
)
INNERMOST_FRAMES = 8
_MODEL_CONSTRUCTION = re.compile(r"^_?(?:initialize|create)_model$")


def frame_component(frame: Frame) -> Component | None:
    # IPython qualifies a function with its class ("RowParallelLinear.weight_loader"): its own name decides.
    function_name = frame.function.rsplit(".", 1)[-1]
    for name, path, function in _COMPILED:
        if path.search(frame.path) or function.search(function_name):
            return name
    return None


def failing_component(frames: list[Frame]) -> Component | None:
    """The component that explains an error, from its frames (innermost first)."""
    components = [frame_component(frame) for frame in frames[:INNERMOST_FRAMES]]
    for wrapper in _WRAPPERS:
        if wrapper in components:
            return wrapper
    for component in components:
        if component in _LEAVES:
            return component
    # A failure deep inside what the warm-up called (a sampler's kernel build, a first forward pass) is the
    # warm-up's, however far out its frame is.
    if any(frame_component(frame) == "warmup" for frame in frames[INNERMOST_FRAMES:]):
        return "warmup"
    # So is a failure deep inside the model's construction from its configuration (the loader building the layers the
    # configuration describes): the engine cannot build what the checkpoint's configuration asks for.
    if any(_MODEL_CONSTRUCTION.match(frame.function) for frame in frames[INNERMOST_FRAMES:]):
        return "weight_loader"
    return next((component for component in components if component is not None), None)
