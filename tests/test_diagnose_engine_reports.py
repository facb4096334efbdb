"""What the engines' own reports say: vLLM's memory-profiling check, its wait for the workers' answer to a step,
its list of the engine-core processes that ended; SGLang's compilation for its CUDA graphs; a just-in-time kernel
library without the file for this GPU generation. The logs are short and invented in the engines' style; the rules
run alone (an empty learned model) so that the checks show what the rules decide.
"""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, diagnose_text
from tools.logs.learned import LearnedModel

CORE = "(EngineCore_DP0 pid=418) ERROR 01-29 15:38:21 [core.py:946] "
WORKER = "(Worker_TP0 pid=98743) ERROR 04-30 19:50:08 [multiproc_executor.py:949] "


def rules_alone(text: str) -> Diagnosis:
    return diagnose_text(text, model=LearnedModel())


def test_free_memory_that_moved_during_profiling_is_a_co_tenant_and_unmoved_memory_an_engine_bug() -> None:
    moved = (
        "AssertionError: Error in memory profiling. Initial free memory 40.12 GiB,\n"  # wrapped as a poster might
        "current free memory 41.5 GiB. This happens when other processes sharing the same\n"
        "container release GPU memory while vLLM is profiling during initialization.\n"
    )
    diagnosis = rules_alone(moved)
    assert diagnosis.diagnosis_class == "cuda_oom", diagnosis.why
    unmoved = (
        f"{CORE}AssertionError: Error in memory profiling. Initial free memory 22.6 GiB, current free memory 22.6 "
        "GiB. This happens when other processes sharing the same container release GPU memory while vLLM is "
        "profiling during initialization.\n"
    )
    diagnosis = rules_alone(unmoved)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.raw_confidence >= 0.5, diagnosis.why


def test_the_workers_not_answering_a_step_in_time_is_a_hang() -> None:
    text = (
        f"{CORE}Traceback (most recent call last):\n"
        f'{CORE}  File "/env/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 300, in '
        "collective_rpc\n"
        f"{CORE}TimeoutError: RPC call to execute_model timed out.\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_hang"


def test_engine_cores_that_ended_without_a_signal_were_not_killed() -> None:
    report = (
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}\n"
    )
    diagnosis = rules_alone(report)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.raw_confidence >= 0.5, diagnosis.why
    killed = report.replace("{}", "{'EngineCore_DP0': -9}")
    assert rules_alone(killed).diagnosis_class == "process_killed"


def test_sglangs_compilation_for_its_graphs_failing_is_a_capture_failure() -> None:
    text = (
        "[2026-01-10 12:00:00 TP0] Scheduler hit an exception: torch._dynamo.exc.BackendCompilerFailed: "
        "backend='inductor' raised: AssertionError: unsupported op\n"
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2900, in run_scheduler_process\n'
        "    scheduler = Scheduler(\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "cuda_graph_capture_failure", diagnosis.why
    assert "disable_piecewise_cuda_graph" in [remedy.id for remedy in diagnosis.remedies]


def test_a_kernel_file_missing_for_this_gpu_generation_is_unsupported_arch_and_another_missing_file_is_not() -> None:
    text = (
        "RuntimeError: Assertion error (include_parser.hpp:69):\n"
        "Failed to open: /env/lib/python3.12/site-packages/deep_gemm/include/deep_gemm/impls/sm103_fp8_gemm_1d1d.cuh\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unsupported_arch", diagnosis.why
    common = text.replace("impls/sm103_fp8_gemm_1d1d.cuh", "common/utils.cuh")
    assert rules_alone(common).diagnosis_class != "unsupported_arch"


def test_sgl_kernel_that_sees_no_gpu_is_an_installation_problem_not_a_missing_architecture() -> None:
    report = (
        "ImportError: \n"
        "[sgl_kernel] CRITICAL: Could not load any common_ops library!\n"
        "\n"
        "Attempted locations:\n"
        "1. Architecture-specific pattern: /env/sgl_kernel/sm90/common_ops.* - found files: []\n"
        "2. Fallback pattern: /env/sgl_kernel/common_ops.* - found files: ['/env/sgl_kernel/common_ops.abi3.so']\n"
        "3. Standard Python import: common_ops - failed\n"
        "\n"
        "GPU Info:\n"
        "- Compute capability: {capability}\n"
        "- Expected variant: {variant}\n"
    )
    no_gpu = rules_alone(report.format(capability="None", variant="CPU/No GPU detected (using precise math)"))
    assert no_gpu.diagnosis_class == "unknown", no_gpu.why
    missing = rules_alone(report.format(capability="121", variant="SM121"))
    assert missing.diagnosis_class == "unsupported_arch", missing.why


def test_a_weight_name_logged_alone_before_the_traceback_is_the_checkpoints() -> None:
    """vLLM's engine process logs a KeyError's text (the quoted key) on a line of its own before its traceback, which
    an excerpt often cuts before the exception line: a key naming one layer's parameter is a weight that the
    checkpoint and the loader disagree on."""
    engine = "ERROR 05-15 11:58:24 [engine.py:448] "
    text = (
        "Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]\n"
        f"{engine}'model.layers.0.self_attn.q_proj.weight'\n"
        f"{engine}Traceback (most recent call last):\n"
        f'{engine}  File "/opt/vllm/vllm/engine/multiprocessing/engine.py", line 436, in run_mp_engine\n'
        f"{engine}    engine = MQLLMEngine.from_vllm_config(\n"
    )
    diagnosis = rules_alone(text)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("model_load_error", "weight-name-logged-alone")
    assert diagnosis.line_number == 2
    quoted = text.replace("'model.layers.0.self_attn.q_proj.weight'", "'max_model_len'")
    assert rules_alone(quoted).signature != "weight-name-logged-alone"  # a key that is no layer's parameter


def test_sglangs_check_that_the_gpus_free_memory_is_balanced_is_a_co_tenant() -> None:
    text = (
        "[2026-01-05 10:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 300, in init_torch_distributed\n'
        "    raise RuntimeError(\n"
        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
        "min_per_gpu_memory=101.79, local_gpu_memory=265.55, local_gpu_memory * 0.9=238.99\n"
    )
    assert rules_alone(text).diagnosis_class == "cuda_oom"


def test_a_check_failing_while_vllm_profiles_graph_memory_is_not_a_capture_failure() -> None:
    def failure(inner: str) -> str:
        return (
            f"{WORKER}Traceback (most recent call last):\n"
            f'{WORKER}  File "/v/vllm/v1/worker/gpu_worker.py", line 381, in determine_available_memory\n'
            f'{WORKER}  File "/v/vllm/v1/worker/gpu_model_runner.py", line 5864, in profile_cudagraph_memory\n'
            f"{WORKER}{inner}\n"
            f"{WORKER}ValueError: Widgets are disabled but failed to convert the specs to one type.\n"
        )

    # The failure is in the KV-cache set-up the profiling called: no graph was being captured.
    kv_cache = '  File "/v/vllm/v1/core/kv_cache_utils.py", line 1216, in unify_hybrid_kv_cache_specs'
    assert rules_alone(failure(kv_cache)).root_cause is not None
    assert rules_alone(failure(kv_cache)).diagnosis_class != "cuda_graph_capture_failure"
    # A capture the profiling ran shows its own frames, and is one.
    capture = '  File "/v/vllm/v1/worker/gpu_model_runner.py", line 5900, in _capture_cudagraphs'
    assert rules_alone(failure(capture)).diagnosis_class == "cuda_graph_capture_failure"


def test_a_host_programs_report_that_the_engine_did_not_start_is_a_failure_not_a_start_up() -> None:
    text = (
        'I1216 02:12:33.624737 179 model_lifecycle.cc:473] "loading: vllm:1"\n'
        "INFO 12-16 10:12:37 [__init__.py:216] Automatically detected platform cuda.\n"
        'E1216 02:12:49.624646 179 model.py:248] "[vllm] Failed to start engine: NoneType: None\\n"\n'
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.key_line is not None
    assert "Failed to start engine" in diagnosis.key_line


def test_a_worker_failing_in_its_load_model_method_is_a_model_loading_failure() -> None:
    ray = "(RayWorkerWrapper pid=269885, ip=10.189.109.87) ERROR 04-11 11:26:12 [worker_base.py:620] "
    text = (
        f"{ray}Error executing method 'load_model'. This might cause deadlock in distributed execution.\n"
        f"{ray}Traceback (most recent call last):\n"
    )
    assert rules_alone(text).diagnosis_class == "model_load_error"
    # Its own error, where it says more, decides.
    oom = f"{ray}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert rules_alone(text + oom).diagnosis_class == "cuda_oom"
