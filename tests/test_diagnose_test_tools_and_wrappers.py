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


def test_python_3_13_tracebacks_with_statements_over_several_lines_are_read_whole() -> None:
    text = (
        "(APIServer pid=8) Traceback (most recent call last):\n"
        '(APIServer pid=8)   File "/venv/lib/python3.14/site-packages/uvloop/__init__.py", line 96, in run\n'
        "(APIServer pid=8)     return __asyncio.run(\n"
        "(APIServer pid=8)            ~~~~~~~~~~~~~^\n"
        "(APIServer pid=8)         wrapper(),\n"
        "(APIServer pid=8)         ^^^^^^^^^^\n"
        "(APIServer pid=8)     ...<2 lines>...\n"
        "(APIServer pid=8)         **run_kwargs\n"
        "(APIServer pid=8)         ^^^^^^^^^^^^\n"
        "(APIServer pid=8)     )\n"
        "(APIServer pid=8)     ^\n"
        '(APIServer pid=8)   File "/venv/lib/python3.14/site-packages/vllm/entrypoints/openai/api_server.py", '
        "line 579, "
        "in signal_handler\n"
        '(APIServer pid=8)     raise KeyboardInterrupt("terminated")\n'
        "(APIServer pid=8) KeyboardInterrupt: terminated\n"
    )
    diagnosis = rules_alone("INFO 05-25 10:54:20 [api_server.py:1] vLLM API server version 0.21.0\n" + text)
    assert diagnosis.diagnosis_class == "stopped", diagnosis.why


def test_a_start_up_the_operator_interrupted_is_stopped_whatever_the_server_reports_after() -> None:
    text = (
        "INFO 05-25 10:54:20 [api_server.py:1] vLLM API server version 0.21.0\n"
        "(EngineCore pid=9) Traceback (most recent call last):\n"
        '(EngineCore pid=9)   File "/venv/lib/python3.13/site-packages/torch/_inductor/compile_fx.py", line 9, '
        "in compile\n"
        "(EngineCore pid=9)     return inner()\n"
        "(EngineCore pid=9) KeyboardInterrupt\n"
        "(APIServer pid=8) RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "stopped", diagnosis.why


def test_ipythons_traceback_frames_name_the_failing_component() -> None:
    text = (
        "---------------------------------------------------------------------------\n"
        "AssertionError                            Traceback (most recent call last)\n"
        "Cell In[1], line 3\n"
        "\n"
        "File ~/lib/python3.12/site-packages/vllm/model_executor/models/gemma3.py:452, in "
        "Gemma3Model.load_weights(self)\n"
        "    450         weight_loader = getattr(param, 'weight_loader')\n"
        "--> 452         weight_loader(param, loaded_weight)\n"
        "\n"
        "File \x1b[0;32m~/lib/python3.12/site-packages/vllm/model_executor/layers/linear.py:1228\x1b[0m, in "
        "\x1b[0;36mRowParallelLinear.weight_loader\x1b[0;34m(self, param, loaded_weight)\n"
        "   1226     loaded_weight = loaded_weight.reshape(1)\n"
        "-> 1228 assert param_data.shape == loaded_weight.shape\n"
        "   1229 param_data.copy_(loaded_weight)\n"
        "\n"
        "AssertionError: \n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.component == "weight_loader"
    assert diagnosis.diagnosis_class == "model_load_error", diagnosis.why


def test_an_offline_engine_that_lists_its_tasks_is_ready() -> None:
    text = (
        "INFO 10-02 04:08:52 [llm_engine.py:420] init engine (profile, create kv cache, warmup model) took 50.94 "
        "seconds\n"
        "INFO 10-02 04:08:52 [llm.py:295] Supported_tasks: ['generate']\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"
    server = "INFO 10-02 04:08:52 [api_server.py:1611] Supported_tasks: ['generate']\n"
    assert rules_alone(server).diagnosis_class == "loading"  # the API server lists its tasks before it listens


def test_rays_fold_of_repeated_lines_never_takes_the_engine_back_to_an_earlier_step() -> None:
    served = (
        "INFO 04-04 03:05:05 model_runner.py:867] Graph capturing finished in 11 secs.\n"
        "Processed prompts: 100%|██████████| 1/1 [00:01<00:00,  1.20s/it]\n"
        "(RayWorkerVllm pid=435, ip=10.0.0.2) INFO 04-04 03:05:05 model_runner.py:867] Graph capturing finished in 11 "
        "secs. [repeated 2x across cluster]\n"
    )
    assert rules_alone(served).diagnosis_class == "healthy"
    loading = (
        "Loading safetensors checkpoint shards:  94% Completed | 154/163 [00:36<00:02,  4.14it/s]\n"
        "(RayWorkerWrapper pid=11876, ip=10.0.0.3) INFO 04-25 14:54:40 [loader.py:458] Loading weights took 36.24 "
        "seconds [repeated 10x across cluster]\n"
    )
    assert rules_alone(loading, STALE).diagnosis_class == "nccl_hang"  # several ranks got past their weights


def test_ascends_runtime_losing_its_device_is_a_hardware_fault() -> None:
    text = (
        "[PID: 1070] 2026-04-30-23:39:01.135.160 Device_Absent/Abnormal(EL0001): Device not found or invalid.\n"
        "        Device[0] lost heartbeat.[FUNC:SyncTask][FILE:direct_hwts_engine.cc][LINE:407]\n"
    )
    assert rules_alone(text).diagnosis_class == "gpu_hardware_fault"


def test_hips_words_for_code_objects_missing_for_the_gpu_are_its_generation() -> None:
    absent = '/src/rocclr/hip_code_object.cpp:92: guarantee(false && "hipErrorNoBinaryForGpu: Couldn\'t find binary")\n'
    assert rules_alone(absent).diagnosis_class == "unsupported_arch"
    invalid = "host:77:79 [0] /src/rccl/enqueue.cc:66 NCCL WARN Cuda failure 'invalid kernel file'\n"
    assert rules_alone(invalid).diagnosis_class == "unsupported_arch"


def test_rank_labelled_rows_of_a_collective_test_and_silence_after_its_header() -> None:
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw\n"
    labelled = (
        " 0:      1048576          8192     float    none      -1   1456.6    0.72    0.70      0   1304.0    0.80\n"
    )
    assert rules_alone(NCCL_TESTS_HEADER + header + labelled).diagnosis_class == "healthy"
    assert rules_alone(NCCL_TESTS_HEADER + header).diagnosis_class == "loading"
    assert rules_alone(NCCL_TESTS_HEADER + header, STALE).diagnosis_class == "nccl_hang"


def test_vllm_first_engines_acceptance_rate_near_zero_is_a_drafter_that_does_not_help() -> None:
    served = 'INFO:     ::1:50352 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    metrics = (
        "INFO 07-24 04:00:31 metrics.py:316] Speculative metrics: Draft acceptance rate: {rate}, System efficiency: "
        "0.059, Number of speculative tokens: 16, Number of accepted tokens: 0, Number of draft tokens tokens: 42272, "
        "Number of emitted tokens tokens: 26\n"
    )
    assert rules_alone(served + metrics.format(rate="0.000")).diagnosis_class == "spec_decode_problem"
    assert rules_alone(served + metrics.format(rate="0.610")).diagnosis_class == "healthy"
    later = (
        "INFO 05-06 06:11:23 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.90, Accepted: 2500 "
        "tokens, Drafted: 3652 tokens, Per-position acceptance rate: 0.900, 0.800, Avg Draft acceptance rate: 0.7%\n"
    )
    assert rules_alone(served + later + later).diagnosis_class == "healthy"  # a percentage, not a rate of 0.7


NCCL_TESTS_TABLE = (
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "           8             2     float     sum      -1     30.1    0.00    0.00      0     28.6    0.00    0.00"
    "      0\n"
)


def test_a_results_row_that_counted_wrong_elements_is_a_failure_before_any_summary() -> None:
    row = "     1048576        262144     float     sum      -1    663.1    1.58    1.58  {wrong}    569.4    1.84"
    row += "    1.84  0\n"
    wrong = rules_alone(NCCL_TESTS_HEADER + NCCL_TESTS_TABLE + row.format(wrong=23785))
    assert wrong.diagnosis_class == "unknown" and wrong.raw_confidence >= 0.5, wrong.why
    assert wrong.key_line.startswith("     1048576"), wrong.key_line
    assert rules_alone(NCCL_TESTS_HEADER + NCCL_TESTS_TABLE + row.format(wrong=0)).diagnosis_class == "healthy"


OLD_NCCL_TESTS_HEADER = (
    "#   Rank  0 uses device  0 [0x04] Tesla P100-PCIE-16GB\n"
    "#   Rank  1 uses device  1 [0x05] Tesla P100-PCIE-16GB\n"
    "\n"
    "#                                                 out-of-place                    in-place\n"
    "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
)


def test_the_first_releases_of_nccl_tests_are_read_too() -> None:
    # No root column and the largest error as a number: rows without error are collectives that ran.
    rows = "".join(
        f"         100           100    char     {op}    0.038   0.00   0.00    0e+00    0.046   0.00   0.00    0e+00\n"
        for op in ("sum", "prod", "max")
    )
    assert rules_alone(OLD_NCCL_TESTS_HEADER + rows).diagnosis_class == "healthy"
    # Its header comes once the communicators are up: silence after it is a collective that never completed.
    assert rules_alone(OLD_NCCL_TESTS_HEADER, STALE).diagnosis_class == "nccl_hang"


def test_a_collective_test_that_concluded_and_exited_with_code_0_is_work_done() -> None:
    run = (
        NCCL_TESTS_HEADER
        + NCCL_TESTS_TABLE
        + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0012\n#\n# Collective test concluded: "
        "all_reduce_perf\n"
    )
    finished = rules_alone(run, DiagnosisHints(exit_code=0))
    assert finished.diagnosis_class == "healthy", finished.why
    # Without its closing lines an exit is still unexplained, and a failing exit code is never work done.
    assert rules_alone(NCCL_TESTS_HEADER + NCCL_TESTS_TABLE, DiagnosisHints(exit_code=0)).diagnosis_class != "healthy"
    assert rules_alone(run, DiagnosisHints(exit_code=1)).diagnosis_class != "healthy"


def test_rows_of_a_collective_without_a_reduction_are_collectives_that_ran() -> None:
    # broadcast_perf of 2021 releases: a root column but no reduction column, "N/A" when results are not checked.
    table = (
        "#                                                     out-of-place                       in-place\n"
        "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "           8             2   float       0    45.82    0.00    0.00    N/A    38.17    0.00    0.00    N/A\n"
    )
    assert rules_alone(NCCL_TESTS_HEADER + table).diagnosis_class == "healthy"


def test_rccls_unit_tests_report_the_nccl_call_that_failed() -> None:
    text = (
        "[ RUN      ] AllGather.InPlace\n"
        "[ ERROR    ] Child 1 reports failure\n"
        "[ ERROR    ] Child process 1 fails NCCL call ncclCommInitRank with code 2\n"
        "[ ERROR    ] Child 1 failed on command [INIT_COMMS]:\n"
        "[  FAILED  ] AllGather.InPlace (1204 ms)\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"


def test_oneccls_own_error_report_is_a_collective_librarys_failure() -> None:
    # Intel's GPUs run vLLM's collectives on oneCCL, which reports in its own format; the worker's traceback that
    # follows is cut before its exception line.
    worker = "(Worker pid=31) "
    text = (
        f"{worker}INFO 03-01 11:21:40 selector.py:1] Using IPEX attention backend.\n"
        + f"{worker}2024:03:01-11:21:50:(31) |CCL_ERROR| exchange_utils.cpp:202 sendmsg_fd: condition "
        '!check_msg_retval("sendmsg", send_bytes, iov, msg, sizeof(u.cntr_buf), sock, fd) failed\n'
        + f"{worker} errno: Broken pipe\n"
        + f"{worker}ERROR 03-01 11:21:50 worker_base.py:386] Error executing method init_device. This might cause "
        "deadlock in distributed execution.\n"
        + f"{worker}ERROR 03-01 11:21:50 worker_base.py:386] Traceback (most recent call last):\n"
        + f'{worker}ERROR 03-01 11:21:50 worker_base.py:386]   File "/opt/vllm/vllm/worker/worker_base.py", line 378, '
        "in execute_method\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"
    assert rules_alone(text.replace("|CCL_ERROR| ", "")).diagnosis_class != "nccl_error"


def test_vendors_runtimes_name_their_memory_and_collective_failures_in_words_of_their_own() -> None:
    started = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    traceback = 'Traceback (most recent call last):\n  File "/opt/vllm/vllm/worker/worker.py", line 7, in init_device\n'
    expected = {
        # Tenstorrent's tt-metal: a buffer no bank of device memory holds, circular buffers beyond a core's L1
        "RuntimeError: TT_FATAL @ bank_manager.cpp:439: false\nOut of Memory: Not enough space to allocate 335544320 B "
        "DRAM buffer across 8 banks, where each bank needs to store 41943040 B": "cuda_oom",
        "RuntimeError: TT_THROW @ program.cpp:782: tt::exception\ninfo:\nStatically allocated circular buffers on core "
        "range [(x=0,y=0) - (x=3,y=0)] grow to 2292704 B which is beyond max L1 size of 1499136 B": "cuda_oom",
        # Kunlun's collective library (XCCL) raising from its own checks
        "ValueError: [INVALID PARAMETER]: error code= 1(at /opt/xmlir/csrc/new_xccl/XCCLUtils.hpp:53)": "nccl_error",
        # a vision encoder of vLLM's refusing the attention backend chosen for it
        "RuntimeError: Qwen2-VL does not support _Backend.FLASHINFER backend now.": "attention_backend_error",
        "RuntimeError: Qwen3-VL does not support AttentionBackendEnum.TRITON_ATTN backend now.": (
            "attention_backend_error"
        ),
    }
    for error, diagnosis_class in expected.items():
        diagnosis = rules_alone(started + traceback + error + "\n")
        assert diagnosis.diagnosis_class == diagnosis_class, (error, diagnosis.why)
    # XCCL's own informational lines name their source file as well
    informational = started + "[XCCL][XCCLUtils.hpp:120] comm 0x5f3a rank 0 nranks 2 initialised\n"
    assert rules_alone(informational).diagnosis_class == "loading"


def test_a_loggers_tag_for_a_redirected_stream_is_not_an_error_level() -> None:
    # FastChat's logger, and the tools built on it, log a worker's stderr at ERROR: a progress bar is no failure.
    text = (
        "2026-03-01 09:00:01 | INFO | model_worker | Loading the model Qwen2-7B on worker 7f3a ...\n"
        "2026-03-01 09:00:04 | ERROR | stderr | Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, "
        "?it/s]\n"
        "2026-03-01 09:00:04 | ERROR | stderr | \n"
        "2026-03-01 09:00:09 | ERROR | stderr | Loading safetensors checkpoint shards:  50% Completed | 2/4 "
        "[00:05<00:05,  2.51s/it]\n"
        "2026-03-01 09:00:09 | ERROR | stderr | \n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "loading", diagnosis.why
    failing = text + "2026-03-01 09:00:10 | ERROR | model_worker | CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert rules_alone(failing).diagnosis_class == "cuda_oom"


def test_an_nccl_tests_process_that_exited_with_the_tests_nccl_error_code_is_a_failed_nccl_call() -> None:
    header = NCCL_TESTS_HEADER + NCCL_TESTS_TABLE.splitlines(keepends=True)[1]
    launcher = (
        "--------------------------------------------------------------------------\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[4410,1],3]\n"
        "  Exit code:    {code}\n"
        "--------------------------------------------------------------------------\n"
    )
    assert rules_alone(header + launcher.format(code=3)).diagnosis_class == "nccl_error"
    assert rules_alone(header, DiagnosisHints(exit_code=3)).diagnosis_class == "nccl_error"
    assert rules_alone(header + launcher.format(code=2)).diagnosis_class != "nccl_error"  # a CUDA call failed


def test_results_rows_pasted_without_their_indent_or_tagged_by_mpich_are_collectives_that_ran() -> None:
    header = NCCL_TESTS_HEADER + NCCL_TESTS_TABLE.splitlines(keepends=True)[1]
    pasted = "8             2     float     sum      -1    97.98    0.00    0.00      0    190.2    0.00    0.00"
    pasted += "      0\n"
    assert rules_alone(header + pasted).diagnosis_class == "healthy"
    tagged = "[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      {wrong}[0]"
    tagged += "    2302.3    0.46    0.87      0\n"
    assert rules_alone(header + tagged.format(wrong=0)).diagnosis_class == "healthy"
    assert rules_alone(header + tagged.format(wrong=12)).diagnosis_class == "unknown"  # wrong values counted
