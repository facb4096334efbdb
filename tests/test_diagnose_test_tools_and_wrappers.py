"""Collective test programs' own reports, launchers' reports of their ranks, wrappers that quote a worker's error, and
the work of jobs that print no request log, each in words of its own.

Each log is short and invented in the style of the program that writes it; the rules run alone (an empty learned
model) so that the checks show what the rules decide.
"""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_text
from tools.logs.learned import LearnedModel

STALE = DiagnosisHints(seconds_since_output=3600)
NCCL_TESTS_HEADER = (
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
    "#\n"
    "# Using devices\n"
)


def rules_alone(text: str, hints: DiagnosisHints | None = None) -> Diagnosis:
    return diagnose_text(text, hints, model=LearnedModel())


def test_several_vllm_workers_reporting_their_termination_are_a_stop_and_one_alone_is_not() -> None:
    loading = "Loading safetensors checkpoint shards:  29% Completed | 2/7 [00:05<00:14,  2.96s/it]\n"
    terminated = "(Worker_TP{rank} pid=13{rank}) WARNING 04-03 16:05:24 [multiproc_executor.py:866] WorkerProc was "
    terminated += "terminated\n"
    several = loading + "".join(terminated.format(rank=rank) for rank in range(3))
    assert rules_alone(several).diagnosis_class == "stopped"
    alone = rules_alone(loading + terminated.format(rank=2))
    assert alone.diagnosis_class != "stopped", alone.why


def test_nccl_before_2_4_writes_its_warnings_without_the_word_nccl() -> None:
    text = (
        "NCCL version 2.2.13+cuda9.0\n"
        "gpu-a:18553:18612 [0] INFO comm 0x7fa42c00a3b0 rank 0 nranks 2\n"
        "gpu-a:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out\n"
        "gpu-a:18553:18611 [0] INFO transport/net_socket.cu:118 -> 2\n"
        "gpu-a:18553:18611 [0] INFO bootstrap.cu:28 -> 2 [Net]\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"


def test_nccl_tests_own_failed_check_is_read_and_a_device_beyond_those_visible_is_a_setting() -> None:
    text = NCCL_TESTS_HEADER + (
        "node1: Test CUDA failure common.cu:963 'invalid device ordinal'\n"
        " .. node1 pid 198671: Test failure common.cu:925\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "config_error", diagnosis.why
    assert diagnosis.root_cause is not None and diagnosis.root_cause.message == "invalid device ordinal"


def test_a_collective_that_delivered_wrong_values_is_a_failure_outside_the_classes() -> None:
    table = (
        "        size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00\n"
    )
    wrong = rules_alone(NCCL_TESTS_HEADER + table + " Out of bounds values : 2 FAILED\n Avg bus bandwidth    : 128.9\n")
    assert wrong.diagnosis_class == "unknown" and wrong.raw_confidence >= 0.5, wrong.why
    right = rules_alone(NCCL_TESTS_HEADER + table + " Out of bounds values : 0 OK\n Avg bus bandwidth    : 128.9\n")
    assert right.diagnosis_class == "healthy"


def test_open_mpis_report_of_a_rank_that_died_on_a_signal_is_a_killed_process() -> None:
    text = (
        "--------------------------------------------------------------------------\n"
        "mpirun noticed that process rank 3 with PID 1167 on node 10.10.21.2 exited on signal 11 "
        "(Segmentation fault).\n"
        "--------------------------------------------------------------------------\n"
        "3 total processes killed (some possibly by mpirun during cleanup)\n"
    )
    assert rules_alone(text).diagnosis_class == "process_killed"


def test_flashinfers_plea_to_report_a_configuration_without_a_kernel_is_the_attention_backends() -> None:
    text = (
        "Error: Invalid configuration : NUM_MMA_Q=2 NUM_MMA_D_QK=2 NUM_MMA_KV=4 NUM_WARPS_Q=4\n"
        "NUM_WARPS_KV=1 please create an issue (https://github.com/flashinfer-ai/flashinfer/issues) and report "
        "the issue to the developers.\n"
    )
    assert rules_alone(text).diagnosis_class == "attention_backend_error"


def test_work_of_jobs_that_print_no_request_log_is_serving() -> None:
    benchmark = (
        "Benchmark ...\n"
        "Prefill. latency: 0.01014 s, throughput:   5916.43 token/s\n"
        "Decode 0. Batch size: 1, latency: 0.00572 s, throughput:    174.85 token/s\n"
    )
    assert rules_alone(benchmark).diagnosis_class == "healthy"
    connector = (
        "(EngineCore_DP0 pid=29) [2026-01-07 22:21:10,470] LMCache INFO: Storing KV cache for 2048 out of 43008 tokens "
        "(skip_leading_tokens=40960) for request chatcmpl-80d09d69db030a8b (vllm_v1_adapter.py:1322)\n"
    )
    assert rules_alone(connector).diagnosis_class == "healthy"
    stage = "[Stage-0] DEBUG 02-25 03:00:07 [omni_stage.py:943] Received batch size=1, request_ids=['0_5837994d']\n"
    assert rules_alone(stage).diagnosis_class == "healthy"


def test_the_error_vllms_executor_quotes_from_a_worker_is_the_root_cause() -> None:
    text = (
        "(EngineCore_DP0 pid=17) ERROR 11-19 12:54:26 [core.py:710] RuntimeError: Worker failed with error 'LoRA rank "
        "32 is greater than max_lora_rank 16.', please check the stack trace above for the root cause\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.root_cause is not None
    assert diagnosis.root_cause.message == "LoRA rank 32 is greater than max_lora_rank 16."
    assert diagnosis.diagnosis_class != "process_killed", diagnosis.why  # the root cause is written, not a death


def test_ascends_communication_error_codes_are_the_collective_librarys() -> None:
    text = (
        "[PID: 108272] 2026-05-21-21:41:11.284.296 Communication_Error_Get_Socket(EI0006): Getting socket times out. "
        "Reason: No abnormal periods were discovered.\n"
        "        Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module. ret = 9\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"


def test_an_extension_built_against_another_pytorch_is_an_installation_whatever_gpu_it_was_looked_up_for() -> None:
    text = (
        "ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library! Attempted locations: "
        "sgl_kernel/sm100/common_ops.abi3.so - failed: sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: "
        "_ZNK3c106SymInt6sym_neERKS0_ GPU Info: - Compute capability: 86\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.raw_confidence >= 0.5, diagnosis.why


def test_a_python_module_that_is_not_installed_is_an_installation_and_a_models_remote_code_is_not() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/model_executor/layers/quantization/__init__.py", line 120, in get_quantization_config\n'
        "    from .compressed_tensors.compressed_tensors import CompressedTensorsConfig\n"
    )
    missing = rules_alone(trace + "ModuleNotFoundError: No module named 'compressed_tensors.compressors.packed'\n")
    assert missing.diagnosis_class == "unknown" and missing.raw_confidence >= 0.5, missing.why
    remote = rules_alone(trace + "ModuleNotFoundError: No module named 'transformers_modules.local.modeling_x'\n")
    assert remote.diagnosis_class != "unknown" or remote.raw_confidence < 0.5, remote.why


def test_a_missing_embedding_is_the_models_without_a_drafter_and_the_drafters_with_one() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/model_executor/models/qwen2_5_vl.py", line 1100, in load_weights\n'
        "    param = params_dict[name]\n"
        "KeyError: 'language_model.embed_tokens.weight'\n"
    )
    assert rules_alone(trace).diagnosis_class == "model_load_error"
    drafted = rules_alone("INFO 06-01 15:56:40 [config.py:1] speculative_config={'method': 'eagle3'}\n" + trace)
    assert drafted.diagnosis_class == "spec_decode_problem", drafted.why


def test_a_capture_that_failed_because_an_attention_kernel_could_not_be_built_is_the_backends() -> None:
    text = (
        "[2026-06-07 18:49:30] Capture cuda graph begin. This can take up to several minutes.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/flashinfer/jit/cpp_ext.py", line 342, in run_ninja\n'
        "    subprocess.run(command)\n"
        "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/cached_ops/"
        "batch_decode_with_kv_cache_dtype_kv_fp4']' returned non-zero exit status 1.\n"
        "Exception: Capture cuda graph failed: Ninja build failed.\n"
    )
    assert rules_alone(text).diagnosis_class == "attention_backend_error"
