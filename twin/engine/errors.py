"""How each engine reports a fatal error at start-up (lines with ``{prefix}`` placeholders).

SGLang: the scheduler subprocess prints ``Scheduler hit an exception: <traceback>`` and the launcher
then logs ``Received sigquit from a child process. It usually means the child failed.``
[sgl-0.5.8 managers/scheduler.py:2995, entrypoints/engine.py:823]. vLLM: the engine core logs
``EngineCore failed to start.`` with the traceback, and the API server raises ``Engine core
initialization failed. See root cause above.``
"""

from __future__ import annotations

SGLANG_ROOT = "/opt/sglang/python/sglang/srt"

_SGLANG_FRAMES = {
    "args": ("server_args.py", 2210, "__post_init__", "self._handle_model_specific_adjustments()"),
    "init": ("model_runner.py", 712, "init_torch_distributed", "torch.cuda.set_device(self.gpu_id)"),
    "load": ("model_runner.py", 880, "load_model", "self.model = get_model(model_config=self.model_config)"),
    "kv_cache": (
        "model_runner_kv_cache_mixin.py",
        329,
        "init_memory_pool",
        'raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")',
    ),
    "cuda_graph": ("cuda_graph_runner.py", 369, "__init__", "self.capture()"),
    "warmup": ("model_runner.py", 2103, "forward_extend", "return self.model.forward(...)"),
    "serving": ("scheduler.py", 1040, "event_loop_overlap", "result = self.run_batch(batch)"),
}

_VLLM_FRAMES = {
    "args": ("arg_utils.py", 1402, "create_engine_config", "model_config = self.create_model_config()"),
    "init": (
        "parallel_state.py",
        1208,
        "init_distributed_environment",
        "torch.distributed.init_process_group(...)",
    ),
    "load": ("gpu_model_runner.py", 2602, "load_model", "self.model = model_loader.load_model(...)"),
    "kv_cache": ("kv_cache_utils.py", 690, "check_enough_kv_cache_memory", "raise ValueError(...)"),
    "cuda_graph": ("gpu_model_runner.py", 3480, "capture_model", "self._capture_cudagraphs(...)"),
    "warmup": ("gpu_worker.py", 371, "compile_or_warm_up_model", "self.model_runner._dummy_run(...)"),
    "serving": ("core.py", 801, "run_busy_loop", "self._process_engine_step()"),
}


def crash_lines(engine: str, phase: str, error: list[str]) -> list[str]:
    """A start-up traceback ending in ``error`` (one or more lines), in the engine's format."""
    if engine == "sglang":
        file, line, function, code = _SGLANG_FRAMES.get(phase, _SGLANG_FRAMES["init"])
        return [
            "{prefix}Scheduler hit an exception: Traceback (most recent call last):",
            f'  File "{SGLANG_ROOT}/managers/scheduler.py", line 2990, in run_scheduler_process',
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
            f'  File "/opt/sglang/python/sglang/srt/model_executor/{file}", line {line}, in {function}',
            f"    {code}",
            *error,
            "",
            "{main_prefix}Received sigquit from a child process. It usually means the child failed.",
        ]
    file, line, function, code = _VLLM_FRAMES.get(phase, _VLLM_FRAMES["init"])
    return [
        "{error_prefix}EngineCore failed to start.",
        "{error_prefix}Traceback (most recent call last):",
        '{error_prefix}  File "/opt/vllm/vllm/v1/engine/core.py", line 699, in run_engine_core',
        "{error_prefix}    engine_core = EngineCoreProc(*args, **kwargs)",
        f'{{error_prefix}}  File "/opt/vllm/vllm/{file}", line {line}, in {function}',
        f"{{error_prefix}}    {code}",
        *["{error_prefix}" + text for text in error],
        "{main_error_prefix}RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}",
    ]


def out_of_memory(tried_gib: float, total_gib: float, free_mib: float, gpu: int) -> str:
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried_gib:.2f} GiB. GPU {gpu} has a "
        f"total capacity of {total_gib:.2f} GiB of which {free_mib:.2f} MiB is free. Of the allocated memory "
        f"{total_gib - free_mib / 1024 - 0.5:.2f} GiB is allocated by PyTorch. "
        "If reserved but unallocated memory "
        "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )


def cuda_graph_failed(engine: str, message: str) -> list[str]:
    """SGLang's capture failure and its 'Possible solutions' list.

    [sgl-0.5.8 model_executor/cuda_graph_runner.py:369,931-938]
    """
    if engine == "vllm":
        return [message]
    return [
        f"Exception: Capture cuda graph failed: {message}",
        "Possible solutions:",
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
        "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
        "3. disable torch compile by not using --enable-torch-compile",
        "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose",
    ]
