"""The generic wording of each class, and the stall of several ranks, on logs none of it was written from.

Each log below is short and invented in the engines' style; its wording is not that of any corpus
excerpt. A generic signature names its class only on error lines (the same words on an INFO or WARNING
line are not a failure) and only where nothing more specific explains the error. The rules run alone
(an empty learned model) so that the checks show what the rules decide.
"""

from __future__ import annotations

import pytest

from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_text
from tools.logs.learned import LearnedModel
from tools.logs.prefixes import split_line

STARTED = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"


def rules_alone(text: str, hints: DiagnosisHints | None = None) -> Diagnosis:
    return diagnose_text(text, hints, model=LearnedModel())


def _traceback(frames: list[tuple[str, str]], message: str) -> str:
    lines = [f'  File "/usr/lib/python3.12/site-packages/{path}", line 7, in {function}\n' for path, function in frames]
    return f"{STARTED}Traceback (most recent call last):\n{''.join(lines)}{message}\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("OSError: [Errno 12] Cannot allocate memory", "cuda_oom"),
        ("RuntimeError: requested 48 GiB for the host KV pool, which exceeds the available host memory", "cuda_oom"),
        ("RuntimeError: Rank 3 scheduler died during initialization (exit code: 1)", "process_killed"),
        ("ERROR 05-01 10:00:09 [ray.py:1] A worker died or was killed while running a task", "process_killed"),
        ("RuntimeError: FlashInfer prefill kernel failed: unsupported page size 7", "attention_backend_error"),
        ("RuntimeError: Cannot record an event during CUDA graph capture (bs 16)", "cuda_graph_capture_failure"),
        ("ValueError: the draft model's hidden size (2048) does not match the target (4096)", "spec_decode_problem"),
        ("RuntimeError: Marlin kernels are not supported on this GPU (found capability 7.0)", "unsupported_arch"),
        ("ValueError: num_kv_heads (6) must be divisible by pipeline stages (4)", "config_error"),
        ("OSError: /models/x/config.json is not a valid JSON file.", "model_load_error"),
        ("OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000)", "port_in_use"),
        ("torch.distributed.DistBackendError: the communicator reported a failure on rank 2", "nccl_error"),
        ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for rank 1", "nccl_hang"),
        ("RuntimeError: RESOURCE_EXHAUSTED: Attempting to allocate 3.20G. That was not possible.", "cuda_oom"),
        ("RuntimeError: EJ0003: Failed to bind the IP port 60001 for the collective's root info", "port_in_use"),
        ("RuntimeError: device 5: hccl allgather task timeout occurred on stream 12 after 1800s", "nccl_error"),
        ("RendezvousConnectionError: The connection to the C10d store has failed. See inner exception", "nccl_error"),
        ("OverflowError: bind(): port must be 0-65535.", "config_error"),
    ],
)
def test_an_error_line_in_new_words_is_named_by_what_it_speaks_of(line: str, expected: str) -> None:
    text = f'{STARTED}Traceback (most recent call last):\n  File "/opt/x/run.py", line 3, in main\n{line}\n'
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == expected, diagnosis.why
    assert diagnosis.key_line is not None and diagnosis.confidence >= 0.5


def test_the_same_words_on_informational_lines_are_no_failure() -> None:
    text = (
        STARTED + "INFO 05-01 10:00:01 [worker.py:1] Reserving memory; the host would run out of memory above 90%\n"
        "WARNING 05-01 10:00:02 [flashinfer.py:1] FlashInfer sampling is not supported; using the PyTorch sampler\n"
        "INFO 05-01 10:00:03 [api_server.py:1] Application startup complete.\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"


def test_a_native_crash_whose_report_names_nccl_is_an_nccl_error_and_elsewhere_a_killed_process() -> None:
    crash = (
        STARTED + "*** SIGSEGV received at time=1700000000 on cpu 3 ***\n"
        "PC: @     0x7f00000001  (unknown)  ncclProxyProgress()\n"
        "    @     0x7f00000002       512  (unknown)\n"
    )
    assert rules_alone(crash).diagnosis_class == "nccl_error"
    elsewhere = crash.replace("ncclProxyProgress()", "at::native::copy_()")
    assert rules_alone(elsewhere).diagnosis_class == "process_killed"


def test_a_silent_start_up_of_several_ranks_after_the_weights_is_a_collective_hang() -> None:
    several = (
        "INFO 05-01 10:00:00 [config.py:1] tensor_parallel_size=4, pipeline_parallel_size=1\n"
        "INFO 05-01 10:00:30 [default_loader.py:1] Loading weights took 30.12 seconds\n"
        "INFO 05-01 10:00:31 [gpu_worker.py:1] Memory profiling takes 0.9 seconds\n"
    )
    stalled = DiagnosisHints(seconds_since_output=900.0)
    assert rules_alone(several, stalled).diagnosis_class == "nccl_hang"
    assert rules_alone(several, DiagnosisHints(seconds_since_output=5.0)).diagnosis_class == "loading"
    single = several.replace("tensor_parallel_size=4", "tensor_parallel_size=1")
    assert rules_alone(single, stalled).diagnosis_class == "loading"


def test_the_engines_normal_retraction_is_no_failure_but_its_batch_failure_is() -> None:
    serving = (
        "[2025-01-01 10:00:00 TP0] Decode batch. #running-req: 2, #token: 9000, token usage: 1.00, #queue-req: 0\n"
        "[2025-01-01 10:00:05 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 9\n"
        "[2025-01-01 10:00:09 TP0] Decode batch. #running-req: 1, #token: 8000, token usage: 0.90, #queue-req: 1\n"
    )
    assert rules_alone(serving).diagnosis_class == "healthy"
    failed = serving + "RuntimeError: Decode out of memory. Try to lower your batch size.\n"
    assert rules_alone(failed).diagnosis_class == "cuda_oom"


def test_nccl_reporting_a_failure_in_its_own_log_is_an_nccl_error() -> None:
    text = (
        "node1:100:200 [0] NCCL INFO Channel 00/02 : 0 1\n"
        "node1:100:300 [0] transport/net_ib.cc:1500 NCCL WARN NET/IB : Got completion from peer with error 5\n"
        "node1:100:200 [0] NCCL INFO transport/net.cc:900 -> 6\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"
    benign = (
        "node1:100:200 [0] NCCL WARN Failed to open libibverbs.so[.1]\n"
        "node1:100:200 [0] NCCL INFO Using network Socket\n"
    )
    assert rules_alone(benign).diagnosis_class == "loading"


def test_an_interrupt_the_engine_reports_before_it_was_ready_ends_in_stopped() -> None:
    text = (
        STARTED + "INFO 05-01 10:00:05 [default_loader.py:1] Loading weights took 5.0 seconds\n"
        "(EngineCore pid=7) INFO 05-01 10:00:09 [core.py:1] [shutdown] EngineCore: received signal=SIGTERM\n"
        "(APIServer pid=6) INFO 05-01 10:00:09 [launcher.py:1] [shutdown] API server: shutdown triggered\n"
    )
    assert rules_alone(text).diagnosis_class == "stopped"


def test_a_silent_capture_while_kernels_are_built_just_in_time_is_still_loading() -> None:
    text = (
        "[2025-01-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, avail mem=20.00 GB\n"
        "2025-01-01 10:00:01,000 - INFO - flashinfer.jit: Prebuilt kernels not found, using JIT backend\n"
        "[2025-01-01 10:00:02 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
    )
    stalled = DiagnosisHints(seconds_since_output=900.0)
    assert rules_alone(text, stalled).diagnosis_class == "loading"
    prebuilt = text.replace("Prebuilt kernels not found, using JIT backend", "Prebuilt kernels found")
    assert rules_alone(prebuilt, stalled).diagnosis_class == "cuda_graph_capture_failure"


def test_a_failure_inside_the_engines_warm_up_is_warmup_failed() -> None:
    text = (
        STARTED + "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/v1/worker/gpu_worker.py", line 5, in compile_or_warm_up_model\n'
        "    kernel_warmup(self)\n"
        '  File "/opt/vllm/vllm/model_executor/warmup/kernel_warmup.py", line 9, in kernel_warmup\n'
        "    prepare(model)\n"
        '  File "/opt/vllm/vllm/utils/helpers.py", line 3, in prepare\n'
        "RuntimeError: the optional kernel package is missing\n"
    )
    assert rules_alone(text).diagnosis_class == "warmup_failed"


def test_an_sglang_log_is_not_ready_at_uvicorns_startup_line() -> None:
    text = (
        "[2025-01-01 10:00:00 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=15.00 GB\n"
        "[2025-01-01 10:00:01 TP0] Memory pool end. avail mem=6.00 GB\n"
        "INFO:     Application startup complete.\n"
    )
    assert rules_alone(text).diagnosis_class == "loading"
    ready = text + "[2025-01-01 10:00:09] The server is fired up and ready to roll!\n"
    assert rules_alone(ready).diagnosis_class == "healthy"


def test_a_log_ending_in_the_argument_usage_text_is_a_rejected_command_line() -> None:
    text = (
        "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]\n"
        "                        [--load-format {auto,pt,safetensors}] [--dtype {auto,half,bfloat16}]\n"
        "                        [--context-length CONTEXT_LENGTH]\n"
    )
    assert rules_alone(text).diagnosis_class == "config_error"


def test_an_illegal_memory_access_while_serving_is_never_healthy() -> None:
    text = (
        STARTED + "INFO 05-01 10:00:09 [api_server.py:1] Application startup complete.\n"
        'INFO:     ::1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "WARNING 05-01 10:01:00 [model_runner_base.py:1] Failed to pickle inputs of failed execution: CUDA error: "
        "an illegal memory access was encountered\n"
    )
    assert rules_alone(text).diagnosis_class == "unknown"


def test_silence_after_collective_communication_is_a_collective_hang() -> None:
    script = (
        "before 1 - {'backend': 'nccl', 'init_method': 'env://', 'rank': 1, 'world_size': 2}\n"
        "host:10:10 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via P2P/IPC\n"
        "host:10:10 [1] NCCL INFO Connected all rings\n"
    )
    assert rules_alone(script, DiagnosisHints(seconds_since_output=900.0)).diagnosis_class == "nccl_hang"
    assert rules_alone(script, DiagnosisHints(seconds_since_output=5.0)).diagnosis_class == "loading"
    # NCCL's informational lines are not failures, whatever words they quote.
    quoted = script + "host:10:10 [1] NCCL INFO dlvsym failed on ibv_x - libmlx5.so.1: undefined symbol: ibv_x\n"
    assert rules_alone(quoted, DiagnosisHints(seconds_since_output=5.0)).diagnosis_class == "loading"


def test_a_silent_process_whose_stack_dump_shows_nccls_threads_is_a_collective_hang() -> None:
    dump = (
        "(gdb) thread apply all bt\n"
        "Thread 4 (Thread 0x7f00aa000000 (LWP 4242)):\n"
        "#0  0x00007f00bb000100 in poll () from /lib/x86_64-linux-gnu/libc.so.6\n"
        "#1  0x00007f00cc000200 in ncclProxyService (args=0x55aa00) at proxy.cc:1500\n"
        "#2  0x00007f00bb000300 in start_thread () from /lib/x86_64-linux-gnu/libc.so.6\n"
    )
    assert rules_alone(dump, DiagnosisHints(seconds_since_output=900.0)).diagnosis_class == "nccl_hang"
    # gdb prints an inlined frame without its address.
    inlined = "(gdb) bt\n#0  ncclProxyProgress (state=0x55aa00) at proxy.cc:900\n#1  start_thread () at pthread.c:4\n"
    assert rules_alone(inlined, DiagnosisHints(seconds_since_output=900.0)).diagnosis_class == "nccl_hang"
    # The same functions named in a sentence, not a stack frame, are no collective in progress.
    prose = "Thread 4 waits; a colleague thought ncclProxyService (the proxy) might be slow.\n"
    assert rules_alone(prose, DiagnosisHints(seconds_since_output=900.0)).diagnosis_class != "nccl_hang"


def test_a_capture_silent_on_several_nodes_is_a_collective_hang() -> None:
    text = (
        "[2025-01-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=16, nnodes=2, node_rank=0)\n"
        "[2025-01-01 10:01:00 TP0] Load weight end. type=DeepseekV3ForCausalLM, avail mem=20.00 GB\n"
        "[2025-01-01 10:01:02 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
    )
    assert rules_alone(text, DiagnosisHints(seconds_since_output=900.0)).diagnosis_class == "nccl_hang"


def test_vllms_own_iteration_timeout_is_a_hang() -> None:
    text = (
        STARTED + "INFO 05-01 10:00:09 [api_server.py:1] Application startup complete.\n"
        "INFO 05-01 10:00:20 async_llm_engine.py:209] Added request abc.\n"
        "ERROR 05-01 10:01:20 async_llm_engine.py:837] Engine iteration timed out. This should never happen!\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "nccl_hang" and "failed_after_ready" in diagnosis.findings


def test_a_rendezvous_without_its_launchers_environment_is_a_command_problem() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 250, in _get_env\n'
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "WORLD_SIZE expected, but not set\n"
    )
    assert rules_alone(text).diagnosis_class == "config_error"


def test_no_attention_backend_for_the_gpu_generation_is_unsupported_arch_and_for_the_shape_is_not() -> None:
    line = (
        "ERROR 05-01 10:00:01 [core.py:1] ValueError: No valid attention backend found for cuda with "
        "AttentionSelectorConfig(head_size=576). Reasons: {FLASHMLA: [compute capability not supported], "
        "TRITON_MLA: [compute capability not supported]}\n"
    )
    assert rules_alone(STARTED + line).diagnosis_class == "unsupported_arch"
    shape = line.replace("TRITON_MLA: [compute capability not supported]", "TRITON_MLA: [head_size not supported]")
    assert rules_alone(STARTED + shape).diagnosis_class == "attention_backend_error"


def test_ascends_collective_library_failing_is_a_collective_error() -> None:
    text = (
        STARTED + "[rank1]: EI0009: 2025-09-24 Transport init error. Reason: [Create][DestLink] failed to link rank 0\n"
        "ERROR 05-01 10:00:02 [core.py:1] Invocation of collective_rpc method failed\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"


def test_pytorchs_own_warning_lines_are_informational_and_an_npu_shortfall_is_memory() -> None:
    text = (
        STARTED + "[rank7]:[W609 06:57:47.819535026 compiler_depend.ts:877] Warning: The HCCL execution timeout "
        "was set to never timeout, so it is bigger than watchdog timeout 1800000ms\n"
        "ERROR 06-09 06:57:48 worker_base.py:581] RuntimeError: NPU out of memory. Tried to allocate 30.00 MiB\n"
    )
    assert rules_alone(text).diagnosis_class == "cuda_oom"


def test_a_kernels_failed_check_of_the_gpu_generation_outranks_the_capture_around_it() -> None:
    text = (
        "[2025-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
        "Exception: Capture cuda graph failed: Assertion error (/kernels/layout.hpp:57):\n"
        "ab.scalar_type() == kPackedFP4 and arch_major == 10\n"
    )
    assert rules_alone(text).diagnosis_class == "unsupported_arch"


def test_a_validators_reason_alone_is_a_rejected_configuration() -> None:
    text = "  Value error, Eagle3 is only supported for Llama models. Got model_type='qwen3' [type=value_error]\n"
    assert rules_alone(text).diagnosis_class == "config_error"


def test_a_weight_the_checkpoint_lacks_is_a_load_error_and_a_drafters_is_speculative() -> None:
    text = (
        STARTED + "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/model_executor/models/llama.py", line 400, in load_weights\n'
        "KeyError: 'layers.0.mlp.gate_up_proj.deq_scale'\n"
        "ERROR 05-01 10:00:02 multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid 7 died, exit code: -15\n"
    )
    assert rules_alone(text).diagnosis_class == "model_load_error"  # the death after it is its consequence
    drafter = text.replace("layers.0.mlp.gate_up_proj.deq_scale", "mtp.layers.0.eh_proj.weight").replace(
        STARTED, STARTED + "INFO 05-01 10:00:00 [config.py:1] speculative_config={'method': 'mtp'}\n"
    )
    assert rules_alone(drafter).diagnosis_class == "spec_decode_problem"


def test_pytorchs_heartbeat_monitor_is_a_hang_and_listed_routes_are_a_server_up() -> None:
    heartbeat = (
        "[rank0]:[E1019 01:04:03.356947152 ProcessGroupNCCL.cpp:1413] [PG 3 Rank 0] Heartbeat monitor timed out! "
        "Process will be terminated after dumping debug info.\n"
    )
    assert rules_alone(heartbeat).diagnosis_class == "nccl_hang"
    stuck = (  # newer releases' wording, wrapped where the poster's terminal wrapped it
        "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6] "
        "ProcessGroupNCCL'\ns watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
        "collectives.\n"
    )
    assert rules_alone(stuck).diagnosis_class == "nccl_hang"
    routes = (
        STARTED + "(APIServer pid=4) INFO 10-24 13:23:36 [launcher.py:46] Route: /v1/completions, Methods: POST\n"
        "(APIServer pid=4) INFO 10-24 13:23:36 [launcher.py:46] Route: /v1/chat/completions, Methods: POST\n"
    )
    assert rules_alone(routes).diagnosis_class == "healthy"


def test_free_memory_below_the_requested_share_is_memory() -> None:
    text = (
        "ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU memory "
        "utilization (0.95, 45.01 GiB).\n"
    )
    assert rules_alone(STARTED + text).diagnosis_class == "cuda_oom"
    caching = "[rank0]:[W830 12:05:56.43 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on device 0\n"
    assert rules_alone(STARTED + caching).diagnosis_class == "cuda_oom"


def test_nccls_optional_ras_service_failing_to_bind_is_no_port_conflict() -> None:
    text = (
        "host:25:25 [1] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use\n"
        "host:25:25 [1] NCCL INFO Connected all rings\n"
    )
    assert rules_alone(text, DiagnosisHints(seconds_since_output=900.0)).diagnosis_class == "nccl_hang"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "Failed: Cuda error /opt/vllm/csrc/custom_all_reduce.cuh:412 'an illegal memory access was encountered'",
            "nccl_error",
        ),
        ("Failed, NCCL error /opt/build/csrc/comm.cu:88 'unhandled system error'", "nccl_error"),
        ("Failed: Cuda error /opt/build/csrc/cache_kernels.cu:57 'out of memory'", "cuda_oom"),
    ],
)
def test_a_failed_check_in_compiled_code_is_a_failure_even_when_forwarded_at_info(line: str, expected: str) -> None:
    """A native check prints one line and exits; a launcher that forwards the engine's output logs it at INFO."""
    text = (
        STARTED + "INFO 05-01 10:00:05 [model_runner.py:1] Loading weights took 3.10 GB\n"
        f"2025-05-01T10:00:09.120Z  INFO launcher::engine: {line}\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == expected, diagnosis.why
    assert diagnosis.root_cause is not None and diagnosis.root_cause.kind == "crash"
    assert diagnosis.key_line is not None and "Failed" in diagnosis.key_line


def test_the_older_capture_progress_bar_marks_the_capture_phase() -> None:
    text = STARTED + "Capturing CUDA graph shapes:  40%|████      | 14/35 [00:30<00:45,  2.2s/it]\n"
    assert rules_alone(text).phase == "cuda_graph"


def test_the_custom_all_reduce_failing_as_capture_ends_is_the_captures_failure() -> None:
    """vLLM's custom all-reduce checks CUDA calls at start-up (opening its peers' buffers) and again when graph
    capture ends (exchanging the captured graphs' buffers): the phase tells the two apart."""
    failed = "Failed: Cuda error /src/vllm/csrc/custom_all_reduce.cuh:431 'invalid device context'\n"
    during_capture = (
        STARTED + "INFO 05-01 10:00:05 [model_runner.py:1] Loading weights took 3.10 GB\n"
        "Capturing CUDA graphs (decode, FULL):  100%|██████████| 67/67 [00:21<00:00,  3.1it/s]\n" + failed
    )
    at_start_up = STARTED + "INFO 05-01 10:00:02 [parallel_state.py:1] rank 0 in world size 2 is assigned as TP0\n"
    assert rules_alone(during_capture).diagnosis_class == "cuda_graph_capture_failure"
    assert rules_alone(at_start_up + failed).diagnosis_class == "nccl_error"


def test_a_package_without_its_metadata_is_an_installation_problem_said_with_confidence() -> None:
    text = (
        STARTED + "Traceback (most recent call last):\n"
        '  File "/opt/env/bin/sglang", line 5, in <module>\n'
        "importlib.metadata.PackageNotFoundError: No package metadata was found for sglang-kernel\n"
    )
    diagnosis = diagnose_text(text, DiagnosisHints(exit_code=1))  # with the learned model: it has no say here
    assert (diagnosis.diagnosis_class, diagnosis.decided_by) == ("unknown", "rules")
    assert diagnosis.confidence >= 0.5 and "installation" in diagnosis.summary


def test_a_program_passing_an_argument_the_engine_release_lacks_is_a_config_error_even_in_bold() -> None:
    """Programs that build the engine in code (evaluation harnesses, RL trainers) meet another release's argument
    classes; bug reports often make the final line bold."""
    text = (
        "RayTaskError(TypeError): ray::generate() (pid=4411, ip=10.0.0.7)\n"
        '  File "/env/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 198, in __init__\n'
        "    engine_args = EngineArgs(\n"
        "**TypeError: EngineArgs.__init__() got an unexpected keyword argument 'disable_log_requests'**\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "config_error", diagnosis.why
    assert diagnosis.root_cause is not None and diagnosis.root_cause.type == "TypeError"


def test_a_model_layer_without_a_quantization_tensor_is_a_load_error() -> None:
    text = (
        STARTED + "ERROR 05-01 10:00:07 [engine.py:1] Traceback (most recent call last):\n"
        'ERROR 05-01 10:00:07 [engine.py:1]   File "/env/torch/nn/modules/module.py", line 1940, in __getattr__\n'
        "ERROR 05-01 10:00:07 [engine.py:1] AttributeError: 'RowParallelLinear' object has no attribute "
        "'weight_scale_inv'\n"
    )
    assert rules_alone(text).diagnosis_class == "model_load_error"
    other = text.replace(
        "'RowParallelLinear' object has no attribute 'weight_scale_inv'", "'NoneType' object has no attribute 'shape'"
    )
    assert rules_alone(other).diagnosis_class != "model_load_error"


def test_a_server_answering_a_wrong_path_with_404_is_serving() -> None:
    text = STARTED + 'INFO:     10.0.0.9:51200 - "POST /chat/completions HTTP/1.1" 404 Not Found\n'
    assert rules_alone(text).diagnosis_class == "healthy"


TORCHRUN_REPORT = (
    "Traceback (most recent call last):\n"
    '  File "/env/bin/torchrun", line 8, in <module>\n'
    '  File "/env/lib/python3.12/site-packages/torch/distributed/run.py", line 901, in main\n'
    '  File "/env/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 270, in launch_agent\n'
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
)


def test_a_launchers_report_of_a_failed_child_points_at_the_child() -> None:
    """torchrun's own traceback (its frames under torch/distributed/) is not a collective's failure."""
    killed = (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 2 (pid: 4242) of "
        "binary: /env/bin/python\n" + TORCHRUN_REPORT
    )
    assert rules_alone(killed).diagnosis_class == "process_killed"
    child = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/srv/train.py", line 40, in <module>\n'
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB.\n" + TORCHRUN_REPORT
    )
    diagnosis = rules_alone(child)
    assert diagnosis.diagnosis_class == "cuda_oom"
    assert diagnosis.root_cause is not None and diagnosis.root_cause.type == "torch.OutOfMemoryError"


def test_a_launcher_saying_its_child_returned_minus_nine_reports_a_killed_process() -> None:
    text = "[2025-03-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['python'] exits with return code = -9\n"
    assert rules_alone(text).diagnosis_class == "process_killed"


def test_nccl_transport_probes_on_a_host_without_infiniband_are_no_failure() -> None:
    text = (
        "node7:311:311 [0] misc/ibvwrap.cc:190 NCCL WARN lib wrapper not initialized.\n"
        "node7:311:311 [0] NCCL INFO transport/net_ib/gdr.cc:48 -> 2\n"
        "node7:311:311 [0] NCCL INFO Using network Socket\n"
        "node7:311:311 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
    )
    assert rules_alone(text).diagnosis_class == "loading"


CTRL_C_UVICORN = (
    "Traceback (most recent call last):\n"
    '  File "/env/lib/python3.11/site-packages/uvicorn/server.py", line 68, in serve\n'
    "    with self.capture_signals():\n"
    '  File "/env/lib/python3.11/site-packages/uvicorn/server.py", line 328, in capture_signals\n'
    "    signal.raise_signal(captured_signal)\n"
    "KeyboardInterrupt\n"
)


def test_an_operators_ctrl_c_after_serving_is_a_stop_not_a_failure() -> None:
    text = (
        STARTED
        + "INFO:     Application startup complete.\n"
        + "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
        + 'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        + "^CINFO:     Shutting down\n"
        + "INFO:     Application shutdown complete.\n"
        + CTRL_C_UVICORN
        + "During handling of the above exception, another exception occurred:\n"
        + "Traceback (most recent call last):\n"
        + '  File "/env/lib/python3.11/asyncio/runners.py", line 123, in run\n'
        + "asyncio.exceptions.CancelledError\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "stopped", diagnosis.summary
    assert diagnosis.root_cause is None


def test_a_ctrl_c_that_interrupts_a_stuck_collective_shows_the_hang() -> None:
    text = (
        STARTED
        + "INFO 05-01 10:00:09 [pynccl.py:1] vLLM is using nccl==2.21.5\n"
        + "^CTraceback (most recent call last):\n"
        + '  File "/env/lib/python3.11/site-packages/vllm/distributed/parallel_state.py", line 900, in init\n'
        + "    self.all_reduce(data)\n"
        + '  File "/env/lib/python3.11/site-packages/vllm/distributed/device_communicators/pynccl.py", line 120, in '
        + "all_reduce\n"
        + "    self.nccl.ncclAllReduce(buffer)\n"
        + "KeyboardInterrupt\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_hang"


NCCL_TESTS_RUN = (
    "#  Rank  0 Group  0 Pid   4100 on    gpu-a device  0 [0x18] NVIDIA A100-SXM4-80GB\n"
    "gpu-a:4100:4100 [0] NCCL INFO Bootstrap : Using ens5:10.1.2.3<0>\n"
    "gpu-a:4100:4107 [0] NCCL INFO comm 0x7f rank 0 nranks 4 cudaDev 0 busId 18000 commId 0x1 - Init COMPLETE\n"
    "   268435456      67108864     float     sum      -1   2900.1   92.56  138.84  {wrong}   2899.0   92.60  138.90  "
    "{wrong}\n"
    "# Out of bounds values : {count}\n"
    "# Avg bus bandwidth    : 121.0042\n"
)


def test_a_finished_nccl_tests_run_is_healthy_unless_it_found_wrong_results() -> None:
    assert rules_alone(NCCL_TESTS_RUN.format(wrong=0, count="0 OK")).diagnosis_class == "healthy"
    # Wrong values are none of the classes (data corrupted by NCCL, the driver or the fabric), however the summary is
    # prefixed.
    wrong = rules_alone(NCCL_TESTS_RUN.format(wrong=3, count="6 FAILED"))
    assert wrong.diagnosis_class == "unknown" and wrong.raw_confidence >= 0.5, wrong.why


VLLM_SERVING = (
    "(APIServer pid=300) INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    "(APIServer pid=300) INFO 05-01 10:02:00 [api_server.py:2] Starting vLLM API server 0 on http://0.0.0.0:9000\n"
    '(APIServer pid=300) INFO:     10.0.0.7:5100 - "POST /v1/completions HTTP/1.1" 200 OK\n'
)


def test_a_failing_site_hook_is_not_the_programs_failure() -> None:
    text = (
        "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
        "ModuleNotFoundError: No module named 'telemetry_shim'\n"
        + VLLM_SERVING.split("\n")[2]  # serving; the ready line is not in the excerpt
        + "\n(EngineCore pid=301) INFO 05-01 11:00:00 [core.py:9] [shutdown] EngineCore: trigger received "
        "signal=SIGTERM\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "stopped", diagnosis.summary
    assert diagnosis.root_cause is None


def test_vllms_report_of_the_port_owner_at_shutdown_is_not_a_new_launch() -> None:
    text = (
        VLLM_SERVING + "(APIServer pid=300) WARNING 05-01 11:00:00 [launcher.py:98] port 9000 is used by process "
        "psutil.Process(pid=300, name='vllm', status='running') launched with command:\n"
        "(APIServer pid=300) WARNING 05-01 11:00:00 [launcher.py:98] /env/bin/vllm serve /models/m --port 9000\n"
        "(APIServer pid=300) INFO 05-01 11:00:00 [launcher.py:101] Shutting down FastAPI HTTP server.\n"
    )
    assert rules_alone(text).diagnosis_class == "stopped"


def test_what_follows_an_operators_sigterm_is_the_stops_consequence() -> None:
    text = (
        "[2026-03-01 10:00:00] The server is fired up and ready to roll!\n"
        '[2026-03-01 10:00:05] INFO:     127.0.0.1:4000 - "POST /generate HTTP/1.1" 200 OK\n'
        "[2026-03-01 11:00:00] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
        "[2026-03-01 11:00:00] Subprocess scheduler_0 (pid=77) crashed with exit code -15. Triggering SIGQUIT.\n"
        "[2026-03-01 11:00:00] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "stopped", diagnosis.summary
    crashed_first = text.replace("11:00:00] SIGTERM", "11:00:01] SIGTERM").split("\n")
    crashed_first.insert(2, crashed_first.pop(3))  # the child dies before the operator's signal
    assert rules_alone("\n".join(crashed_first)).diagnosis_class not in ("stopped", "healthy")


def test_a_file_failing_its_integrity_check_is_a_model_files_problem() -> None:
    text = STARTED + "tiktoken_ext.TiktokenError: invalid bpe vocab file: hash mismatch: computed=aa, expected=bb\n"
    assert rules_alone(text).diagnosis_class == "model_load_error"


CLEANUP = (
    "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: There appear to be "
    "2 leaked semaphore objects to clean up at shutdown\n"
    "  warnings.warn('resource_tracker: There appear to be %d '\n"
)


def test_a_start_up_that_ends_in_silence_and_exit_time_cleanup_was_killed() -> None:
    loading = STARTED + "INFO 05-01 10:00:20 [gpu_model_runner.py:1] Loading weights took 12.00 seconds\n"
    assert rules_alone(loading).diagnosis_class == "loading"
    assert rules_alone(loading + CLEANUP).diagnosis_class == "process_killed"
    assert rules_alone(loading + "^C" + CLEANUP).diagnosis_class != "process_killed"  # the operator ended it


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=881.0. Some of the step tasks have been OOM "
            "Killed.",
            "process_killed",
        ),
        (
            "[W301 10:00:00.1 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to host 10.0.0.9:29500 - "
            "retrying (try=3, timeout=600000ms, delay=1200ms): Connection refused",
            "nccl_error",
        ),
        ("/build/nvshmem/src/host/topo/topo.cpp:469: [GPU 3] Peer GPU 12 is not accessible, exiting ...", "nccl_error"),
        (
            "WARNING 05-01 10:00:01 [ray_utils.py:342] The number of required GPUs exceeds the total number of "
            "available GPUs in the placement group.",
            "config_error",
        ),
    ],
)
def test_the_schedulers_and_transports_around_the_engine_speak_for_their_class(line: str, expected: str) -> None:
    assert rules_alone(STARTED + line + "\n").diagnosis_class == expected


def test_nccls_own_record_of_collectives_in_progress_is_a_working_job() -> None:
    text = (
        "gpu-b:900:900 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 3b000 commId 0x7 - Init COMPLETE\n"
        "gpu-b:900:900 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 64 datatype 7 op 0 root 0\n"
        "gpu-b:900:900 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x1 recvbuff 0x1 count 64 datatype 7 op 0 root 0\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"
    assert rules_alone(text.rsplit("gpu-b", 1)[0]).diagnosis_class == "loading"  # only the first collective issued


FAULT_HANDLER = (
    "CUDA error (csrc/decode/splitkv_kernel.cu:212): an illegal memory access was encountered\n"
    "Fatal Python error: {signal}\n\n"
    "Thread 0x00007f01 (most recent call first):\n"
    '  File "/env/lib/python3.12/threading.py", line 359 in wait\n'
    '  File "/env/lib/python3.12/site-packages/tqdm/_monitor.py", line 60 in run\n\n'
    "Current thread 0x00007f02 (most recent call first):\n"
    '  File "/env/lib/python3.12/site-packages/torch/_ops.py", line 829 in __call__\n'
    '  File "/srv/sglang/srt/layers/attention/mla_backend.py", line 400 in forward_decode\n'
    '  File "/srv/sglang/srt/model_executor/model_runner.py", line 900 in forward\n'
)


def test_a_fatal_error_is_read_from_the_crashing_threads_stack() -> None:
    aborted = rules_alone(STARTED + FAULT_HANDLER.format(signal="Aborted"))
    assert aborted.root_cause is not None and aborted.root_cause.component == "attention"
    assert aborted.diagnosis_class == "attention_backend_error"
    segfault = rules_alone(STARTED + FAULT_HANDLER.format(signal="Segmentation fault"))
    assert segfault.diagnosis_class == "process_killed"  # a host-side fault, not a kernel's failed check


def test_a_c10_errors_backtrace_is_not_a_thread_caught_waiting() -> None:
    text = (
        STARTED
        + "INFO 05-01 10:00:05 [pynccl.py:1] vLLM is using nccl==2.21.5\n"
        + '[rank1]:[W301 10:00:09.1 ProcessGroupNCCL.cpp:1771] Failed to check the "should dump" flag on TCPStore\n'
        + "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:679 (most recent call "
        "first):\n"
        + "frame #0: c10d::TCPStore::check(std::vector<std::string> const&) + 0x3c8 (0x7f in libtorch_cpu.so)\n"
        + "frame #1: c10d::ProcessGroupNCCL::HeartbeatMonitor::runLoop() + 0x3c8 (0x7f in libtorch_cuda.so)\n"
    )
    assert rules_alone(text).diagnosis_class != "nccl_hang"


def test_a_shell_reporting_its_job_killed_or_terminated_says_how_the_engine_ended() -> None:
    serving = STARTED + 'INFO:     10.0.0.7:5100 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    killed = rules_alone(serving + "./serve.sh: line 40: 9191 Killed                  vllm serve /models/m\n")
    assert killed.diagnosis_class == "process_killed"
    assert (
        rules_alone(serving + "[2]-  Killed                  vllm serve /models/m\n").diagnosis_class
        == "process_killed"
    )
    terminated = rules_alone(serving + "./serve.sh: line 40: 9191 Terminated              vllm serve /models/m\n")
    assert terminated.diagnosis_class == "stopped"


def test_a_setting_named_after_speculative_decoding_does_not_switch_it_on() -> None:
    text = (
        "(EngineCore pid=7) INFO 05-01 10:00:01 [core.py:1] Initializing a V1 LLM engine (v0.32.0) with config: "
        "model='/models/m', speculative_config=None, per_request_spec_decode_metrics='none'\n"
        "(Worker pid=8) ERROR 05-01 10:00:09 [multiproc_executor.py:1] Traceback (most recent call last):\n"
        '(Worker pid=8) ERROR 05-01 10:00:09 [multiproc_executor.py:1]   File "/env/vllm/model_executor/'
        'model_loader/weight_utils.py", line 700, in default_weight_loader\n'
        "(Worker pid=8) ERROR 05-01 10:00:09 [multiproc_executor.py:1] RuntimeError: The size of tensor a (512) "
        "must match the size of tensor b (256) at non-singleton dimension 1\n"
    )
    assert rules_alone(text).diagnosis_class == "model_load_error"


def test_an_environment_setting_the_engine_cannot_parse_is_a_rejected_setting() -> None:
    text = (
        STARTED
        + "ERROR 05-01 10:00:09 [core.py:1] Traceback (most recent call last):\n"
        + 'ERROR 05-01 10:00:09 [core.py:1]   File "/env/vllm/utils/ompmultiprocessing.py", line 170, in '
        "_parse_omp_threads_bind_env\n"
        + 'ERROR 05-01 10:00:09 [core.py:1]   File "/env/vllm/utils/cpu_resource_utils.py", line 185, in '
        "parse_id_list\n"
        + "ERROR 05-01 10:00:09 [core.py:1] ValueError: invalid literal for int() with base 10: 'all-of-them'\n"
    )
    assert rules_alone(text).diagnosis_class == "config_error"


def test_a_ready_line_right_after_a_failed_warm_up_is_not_healthy() -> None:
    """SGLang logs its ready line after a failed disaggregation warm-up too (the server is then unhealthy)."""
    start = (
        "[2026-05-01 10:00:00] server_args=ServerArgs(model_path='m', disaggregation_mode='prefill')\n"
        "[2026-05-01 10:00:40] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        "[2026-05-01 10:00:41] Start of pd disaggregation warmup ...\n"
    )
    failed = start + (
        "[2026-05-01 10:00:43] Disaggregation warmup failed (mode=prefill), status codes: [503]\n"
        "[2026-05-01 10:00:43] The server is fired up and ready to roll!\n"
    )
    diagnosis = rules_alone(failed)
    assert diagnosis.diagnosis_class == "warmup_failed", diagnosis.why
    assert diagnosis.key_line is not None and "warmup failed" in diagnosis.key_line
    passed = start + (
        "[2026-05-01 10:00:43] End of disaggregation warmup\n"
        "[2026-05-01 10:00:43] The server is fired up and ready to roll!\n"
    )
    assert rules_alone(passed).diagnosis_class == "healthy"


LOADER = [("vllm/model_executor/model_loader/default_loader.py", "load_weights")]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("NotImplementedError: Pipeline parallelism is not supported for this model's vision tower", "config_error"),
        ("ValueError: GGUF checkpoints with TP are not supported; load the model on one device", "config_error"),
        (
            "RuntimeError: the checkpoint's tensor parallel shard 3 has shape [64, 128], expected [128, 128]",
            "model_load_error",
        ),
        (
            "RuntimeError: FP8 weights with tensor parallelism are not supported on compute capability 7.5",
            "unsupported_arch",
        ),
    ],
)
def test_a_refused_parallelism_setting_is_an_option_to_change_even_inside_the_loader(
    message: str, expected: str
) -> None:
    """A check in the loader that refuses a parallelism setting names an option to change, not a broken model; a
    shape the checkpoint does not have is the model's, and a refusal for the GPU generation is the GPU's."""
    diagnosis = rules_alone(_traceback(LOADER, message))
    assert diagnosis.diagnosis_class == expected, diagnosis.why


def test_an_error_deep_inside_the_warm_up_is_the_warm_ups_wherever_its_frame_is() -> None:
    """The warm-up's frame may be far from the innermost ones (a sampler that builds a kernel on first use): the
    failure is still the warm-up's, unless an inner frame names a component that explains it."""
    outer = [("vllm/v1/engine/core.py", "_initialize_kv_caches"), ("vllm/v1/worker/gpu/warmup.py", "warmup_kernels")]
    sampler = [("vllm/v1/worker/gpu/model_runner.py", "sample_tokens")] + [
        ("vllm/v1/sample/ops/topk_topp.py", f"step_{index}") for index in range(7)
    ]
    kernel_build = [("kernels/jit/core.py", "build_and_load"), ("kernels/jit/ext.py", "find_compiler")]
    message = "RuntimeError: no compiler found to build the top-k kernel"
    diagnosis = rules_alone(_traceback(outer + sampler + kernel_build, message))
    assert diagnosis.diagnosis_class == "warmup_failed", diagnosis.why
    loader = [("vllm/model_executor/model_loader/default_loader.py", "load_weights")]
    diagnosis = rules_alone(_traceback(outer + sampler + loader, "RuntimeError: shard 2 is truncated"))
    assert diagnosis.diagnosis_class == "model_load_error", diagnosis.why


SILENT_WORKER = (
    "(Worker pid=41) INFO 05-01 10:00:02 [model_runner.py:1] Starting to load model /models/m...\n"
    "(EngineCore pid=40) ERROR 05-01 10:00:09 [core.py:1] EngineCore failed to start.\n"
    "(EngineCore pid=40) ERROR 05-01 10:00:09 [core.py:1] Traceback (most recent call last):\n"
    '(EngineCore pid=40) ERROR 05-01 10:00:09 [core.py:1]   File "/opt/vllm/executor/mp.py", line 8, in wait\n'
    "(EngineCore pid=40) ERROR 05-01 10:00:09 [core.py:1] Exception: WorkerProc initialization failed due to an "
    "exception in a background process. See stack trace for root cause.\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/vllm/entrypoints/api_server.py", line 3, in run_server\n'
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
)


def test_a_failure_that_points_to_a_root_cause_no_process_wrote_is_a_silent_death() -> None:
    """The reports point elsewhere and the worker wrote nothing (its last line is ordinary progress): it died without
    a Python error, as when killed from outside. With the worker's own error in the log, that error decides."""
    diagnosis = rules_alone(STARTED + SILENT_WORKER)
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why
    own_error = SILENT_WORKER.replace(
        "Starting to load model /models/m...\n",
        "Starting to load model /models/m...\n(Worker pid=41) ERROR 05-01 10:00:03 [worker.py:1] Traceback (most "
        'recent call last):\n(Worker pid=41) ERROR 05-01 10:00:03 [worker.py:1]   File "/opt/vllm/arg_utils.py", '
        "line 5, in create_engine_config\n(Worker pid=41) ERROR 05-01 10:00:03 [worker.py:1] ValueError: "
        "max_num_seqs (0) must be at least 1\n",
    )
    assert rules_alone(STARTED + own_error).diagnosis_class == "config_error"


def test_a_process_that_finds_its_peer_gone_reports_the_peers_death() -> None:
    text = (
        STARTED + "(Worker pid=41) INFO 05-01 10:00:02 [loader.py:1] Loading weights took 0.10 seconds\n"
        "(Worker pid=41) ERROR 05-01 10:00:04 [worker.py:1] Traceback (most recent call last):\n"
        '(Worker pid=41) ERROR 05-01 10:00:04 [worker.py:1]   File "/opt/vllm/worker/queue.py", line 9, in send\n'
        "(Worker pid=41) ERROR 05-01 10:00:04 [worker.py:1] BrokenPipeError: [Errno 32] Broken pipe\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why


def test_a_check_that_lists_the_values_it_accepts_names_an_option_to_change() -> None:
    """A value refused with the list of valid ones is a setting to change, even when the component that checks it
    (here the attention backend's selector) would otherwise explain a failure."""
    selector = [("vllm/attention/selector.py", "resolve_backend")]
    refused = rules_alone(_traceback(selector, "ValueError: no backend named 'TURBO'; valid options are: A, B"))
    assert refused.diagnosis_class == "config_error", refused.why
    failed = rules_alone(_traceback(selector, "RuntimeError: the paged kernel failed with an invalid launch shape"))
    assert failed.diagnosis_class == "attention_backend_error", failed.why


def test_a_shape_mismatch_while_the_drafters_graph_is_captured_is_the_drafter() -> None:
    def capture(frames: list[tuple[str, str]], reason: str) -> str:
        lines = "".join(f'  File "/venv/site-packages/sglang/srt/{path}", line 9, in {name}\n' for path, name in frames)
        return (
            "[2026-02-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2)\n"
            f"Traceback (most recent call last):\n{lines}Exception: Capture cuda graph failed: {reason}\n"
        )

    drafter = [("managers/scheduler.py", "__init__"), ("speculative/draft_worker.py", "init_graphs")]
    drafter.append(("speculative/draft_graph_runner.py", "__init__"))
    target = [("managers/scheduler.py", "__init__"), ("model_executor/cuda_graph_runner.py", "__init__")]
    shapes = "size mismatch between tensors of 5120 and 4096 columns"
    assert rules_alone(capture(drafter, shapes)).diagnosis_class == "spec_decode_problem"
    assert rules_alone(capture(target, shapes)).diagnosis_class == "cuda_graph_capture_failure"
    captured = "operation not permitted when stream is capturing"
    assert rules_alone(capture(drafter, captured)).diagnosis_class == "cuda_graph_capture_failure"


def test_a_traceback_logged_with_a_level_column_on_every_line_is_read_and_its_config_lookup_is_the_model() -> None:
    frames = [
        ("sglang/srt/managers/scheduler.py", "__init__"),
        ("transformers/models/auto/configuration_auto.py", "from_pretrained"),
        ("transformers/models/auto/configuration_auto.py", "__getitem__"),
    ]
    plain = _traceback(frames, "KeyError: 'mystery_moe'").replace(STARTED, "")
    logged = "".join(f"[2026-03-01 09:00:00] ERROR: {line}\n" for line in plain.splitlines())
    diagnosis = rules_alone(logged)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.component == "model_config"
    assert diagnosis.diagnosis_class == "model_load_error", diagnosis.why


def test_a_size_that_does_not_divide_is_a_setting_wherever_it_is_checked() -> None:
    text = _traceback(
        [("sglang/srt/layers/linear.py", "__init__"), ("sglang/srt/distributed/utils.py", "ensure_divisibility")],
        "AssertionError: 40 is not divisible by 3",
    )
    assert rules_alone(text).diagnosis_class == "config_error"


def test_a_debuggers_interrupt_is_neither_a_death_nor_a_stop() -> None:
    stack = (
        'Thread 1 "all_gather_perf" received signal SIGINT, Interrupt.\n'
        "0x00007f0000000001 in sched_yield () at ../sysdeps/unix/syscall-template.S:78\n"
        "(gdb) bt\n"
        "#0  0x00007f0000000001 in sched_yield () at ../sysdeps/unix/syscall-template.S:78\n"
        "#1  0x0000550000000002 in testStreamSynchronize (ngpus=4, streams=0x1, comms=0x2) at common.cu:478\n"
        "#2  0x0000550000000003 in TimeTest (args=0x3, type=ncclInt8, op=ncclSum, root=-1) at common.cu:696\n"
    )
    diagnosis = rules_alone("# nThread 1 nGpus 4 minBytes 8 maxBytes 1048576\n" + stack)
    assert diagnosis.diagnosis_class not in ("process_killed", "stopped"), diagnosis.why
    crashed = stack.replace("SIGINT, Interrupt.", "SIGSEGV, Segmentation fault.")
    assert rules_alone(crashed).diagnosis_class == "process_killed"


def test_a_model_config_that_names_no_architecture_is_the_model() -> None:
    text = (
        STARTED + "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, No model architectures are specified [type=value_error, input_value=ArgsKwargs((), {})]\n"
    )
    assert rules_alone(text).diagnosis_class == "model_load_error"
    warned = STARTED + "WARNING 05-01 10:00:01 [registry.py:1] No model architectures are specified\n"
    assert rules_alone(warned).diagnosis_class != "model_load_error"


def _process_traceback(origin: str, frames: list[tuple[str, str]], message: str) -> str:
    prefix = f"({origin}) ERROR 05-01 10:00:05 [multiproc_executor.py:1] "
    lines = [f'{prefix}  File "/venv/site-packages/vllm/{path}", line 7, in {function}\n' for path, function in frames]
    return f"{prefix}Traceback (most recent call last):\n{''.join(lines)}{prefix}{message}\n"


def test_an_error_its_process_carried_on_from_is_not_the_root_cause() -> None:
    saved = _process_traceback(
        "APIServer pid=1",
        [("model_executor/models/registry.py", "_save_modelinfo_to_cache")],
        "PermissionError: [Errno 13] Permission denied: '/cache/modelinfos'",
    )
    went_on = "(APIServer pid=1) INFO 05-01 10:00:06 [model.py:1] Using max model len 2048\n"
    fatal = _process_traceback(
        "Worker pid=3",
        [("v1/worker/gpu_worker.py", "init_device"), ("distributed/utils.py", "ensure_divisibility")],
        "AssertionError: 14 is not divisible by 4",
    )
    assert rules_alone(STARTED + saved + went_on + fatal).diagnosis_class == "config_error"
    stopping = "(APIServer pid=1) INFO 05-01 10:00:06 [launcher.py:1] Shutting down the server\n"
    assert rules_alone(STARTED + saved + stopping + fatal).diagnosis_class == "model_load_error"


def test_a_failure_in_the_model_runners_warming_up_is_the_warm_up() -> None:
    text = _process_traceback(
        "Worker pid=3",
        [
            ("v1/worker/cpu_worker.py", "determine_available_memory"),
            ("v1/worker/cpu_model_runner.py", "warming_up_model"),
        ],
        "FileNotFoundError: [Errno 2] No such file or directory: '/scratch/compile-cache'",
    )
    assert rules_alone(STARTED + text).diagnosis_class == "warmup_failed"


def test_a_value_the_operator_gave_that_the_engine_refuses_is_a_setting() -> None:
    given = "(APIServer pid=1) INFO 05-01 10:00:01 [api_utils.py:1] non-default args: {'load_format': 'quantum'}\n"
    refused = _process_traceback(
        "Worker pid=3",
        [("model_executor/model_loader/__init__.py", "get_model_loader")],
        "ValueError: Load format `quantum` is not supported",
    )
    assert rules_alone(STARTED + given + refused).diagnosis_class == "config_error"
    assert rules_alone(STARTED + refused).diagnosis_class == "model_load_error"  # not a value the operator gave


def test_a_hang_up_or_a_bus_error_after_ready_is_a_killed_process() -> None:
    served = STARTED + (
        'INFO:     Application startup complete.\nINFO:     127.0.0.1:4000 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    )
    assert rules_alone(served, DiagnosisHints(exit_code=-1)).diagnosis_class == "process_killed"
    assert rules_alone(served, DiagnosisHints(exit_code=-7)).diagnosis_class == "process_killed"


def test_request_errors_followed_by_answered_requests_are_a_server_serving() -> None:
    failed = _process_traceback(
        "APIServer pid=1",
        [("entrypoints/openai/serving_chat.py", "create_chat_completion"), ("entrypoints/chat_utils.py", "apply")],
        "ValueError: Conversation roles must alternate user/assistant",
    ).replace("Traceback (most recent call last):\n", "", 1)
    answered = '(APIServer pid=1) INFO:     127.0.0.1:4000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    assert rules_alone(failed + answered).diagnosis_class == "healthy"
    assert rules_alone(failed).diagnosis_class != "healthy"  # nothing shows the engine serving


def test_broadcast_notices_right_after_a_kernel_build_are_still_loading_for_a_while() -> None:
    notice = (
        "(EngineCore pid=2) INFO 05-01 10:02:00 [shm_broadcast.py:1] No available shared memory broadcast block "
        "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming "
        "work (e.g. compilation)\n"
    )
    built = STARTED + "ninja: Entering directory `/root/.cache/kernels/topk'\nptxas info    : Compile time = 0.1 ms\n"
    assert rules_alone(built + notice).diagnosis_class == "loading"
    assert rules_alone(built + notice + notice.replace("10:02", "10:03")).diagnosis_class == "loading"
    assert rules_alone(built + notice * 11).diagnosis_class == "nccl_hang"  # longer than a first build takes
    assert rules_alone(built + notice + STARTED + notice).diagnosis_class == "nccl_hang"  # not the build's wait
    assert rules_alone(STARTED + notice).diagnosis_class == "nccl_hang"


def test_a_failure_in_the_cache_pool_an_attention_backend_was_building_is_the_backends() -> None:
    text = _traceback(
        [
            ("sglang/srt/model_executor/model_runner.py", "_get_attention_backend"),
            ("sglang/srt/layers/attention/rocm_backend.py", "__init__"),
            ("sglang/srt/mem_cache/memory_pool.py", "get_value_buffer"),
            ("sglang/srt/mem_cache/memory_pool.py", "_layer_index"),
        ],
        "ValueError: layer 0 is not one of the pool's full-attention layers",
    )
    assert rules_alone(text).diagnosis_class == "attention_backend_error"


def test_a_refused_kv_cache_data_type_or_a_backend_lacking_an_attribute_is_the_attention_backend() -> None:
    dtype = _traceback(
        [("vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model"), ("vllm/_custom_ops.py", "write_to_cache")],
        "RuntimeError: unsupported KV cache dtype: float8_e5m2",
    )
    assert rules_alone(dtype).diagnosis_class == "attention_backend_error"
    lacking = _traceback(
        [("sglang/srt/models/qwen2.py", "forward")],
        "AttributeError: 'FlashMLAAttnBackend' object has no attribute 'page_table'",
    )
    assert rules_alone(lacking).diagnosis_class == "attention_backend_error"


def test_a_model_configuration_file_that_cannot_be_read_is_the_models_and_a_range_check_a_setting() -> None:
    config = (
        STARTED + "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, Failed to load gemma 'settings.yaml' config for model /models/g. Check that it exists.\n"
    )
    assert rules_alone(config).diagnosis_class == "model_load_error"
    seed = _process_traceback(
        "Worker pid=3", [("v1/worker/cpu_worker.py", "init_device")], "ValueError: Top-k must be between 1 and 1024"
    )
    assert rules_alone(STARTED + seed).diagnosis_class == "config_error"


def test_an_architecture_refused_that_is_a_drafters_is_speculative_decoding() -> None:
    def refused(names: str) -> str:
        return (
            STARTED + "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
            f"  Value error, Model architectures [{names}] are not supported for now. Supported architectures: [...]\n"
        )

    assert rules_alone(refused("'MedusaQwenForCausalLM'")).diagnosis_class == "spec_decode_problem"
    assert rules_alone(refused("'MysteryForCausalLM'")).diagnosis_class == "model_load_error"


def test_a_module_the_operator_named_in_an_argument_that_cannot_be_imported_is_a_setting() -> None:
    given = (
        "(APIServer pid=1) INFO 05-01 10:00:01 [api_utils.py:1] non-default args: {'middleware': ['acme_auth.Gate']}\n"
    )
    missing = _process_traceback(
        "APIServer pid=1",
        [("entrypoints/openai/api_server.py", "build_app")],
        "ModuleNotFoundError: No module named 'acme_auth'",
    )
    assert rules_alone(STARTED + given + missing).diagnosis_class == "config_error"
    assert rules_alone(STARTED + missing).diagnosis_class != "config_error"  # a module nobody named: installation


def test_a_refused_path_the_operator_gave_is_not_a_setting() -> None:
    given = "(APIServer pid=1) INFO 05-01 10:00:01 [api_utils.py:1] non-default args: {'model': '/models/x'}\n"
    refused = _process_traceback(
        "Worker pid=3",
        [("model_executor/model_loader/utils.py", "get_model_architecture")],
        "ValueError: Unsupported model '/models/x'",
    )
    assert rules_alone(STARTED + given + refused).diagnosis_class == "model_load_error"


def test_a_traceback_under_mpiruns_output_tags_is_read_with_its_rank() -> None:
    tagged = (
        "[1,0]<stdout>:node-a:41:41 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "[1,1]<stderr>:Traceback (most recent call last):\n"
        "[1,0]<stdout>:node-a:41:41 [0] NCCL INFO Channel 00/02 :    0   1\n"
        '[1,1]<stderr>:  File "/opt/jobs/allreduce_check.py", line 31, in <module>\n'
        "[1,1]<stderr>:    torch.distributed.all_reduce(buffer)\n"
        "[1,1]<stderr>:torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, unhandled system error\n"
    )
    root_cause = rules_alone(tagged).root_cause
    assert root_cause is not None and root_cause.type == "torch.distributed.DistBackendError"
    assert root_cause.origin == "1,1" and root_cause.frames[0].function == "<module>"


def test_communicators_destroyed_after_a_finished_collective_test_are_no_start_up() -> None:
    finished = (
        "gpu-a:1201:1201 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
        "gpu-a:1201:1220 [0] NCCL INFO comm 0x5612ab3c0010 rank 0 nranks 2 cudaDev 0 busId 1a000 - Init COMPLETE\n"
        "    67108864      16777216     float     sum      -1    512.3  131.00  131.00      0    510.8  131.38\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 48.210\n"
        "gpu-a:1201:1201 [0] NCCL INFO comm 0x5612ab3c0010 rank 0 nranks 2 cudaDev 0 busId 1a000 - Destroy COMPLETE\n"
        "gpu-a:1202:1202 [1] NCCL INFO comm 0x55f0c2d10020 rank 1 nranks 2 cudaDev 1 busId 1b000 - Destroy COMPLETE\n"
    )
    diagnosis = rules_alone(finished)
    assert (diagnosis.diagnosis_class, diagnosis.phase) == ("healthy", "serving")
    started = finished.split("    67108864")[0]  # the same communicator only set up: still starting
    assert rules_alone(started).phase == "distributed_init"


def test_a_training_job_reporting_its_steps_is_running_until_an_error_follows() -> None:
    steps = "".join(
        f"[rank0]:2025-06-01 10:00:0{step},100 - trainer - INFO - step: {step:>3}  loss: {8 - step / 2:.4f}  tps: 41\n"
        for step in range(1, 5)
    )
    running = rules_alone("[rank0]:2025-06-01 09:59:50,000 - trainer - INFO - Building model\n" + steps)
    assert running.diagnosis_class == "healthy"
    failed = rules_alone(
        steps + "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB on device 0\n"
    )
    assert failed.diagnosis_class == "cuda_oom"


def test_an_event_queried_while_its_stream_was_capturing_is_the_captures_failure() -> None:
    text = (
        STARTED + "[rank2]: RuntimeError: CUDA error: operation not permitted on an event last recorded in a "
        "capturing stream\n"
        "Fatal Python error: Aborted\n"
    )
    assert rules_alone(text).diagnosis_class == "cuda_graph_capture_failure"


@pytest.mark.parametrize(
    "line",
    [
        "AssertionError: Only {'triton', 'fa3'} backends are supported on Hopper GPUs for sliding-window MoE models. "
        "Got attention_backend=torch_native.",
        "ValueError: Please use XFormers backend for models with alibi slopes; set VLLM_ATTENTION_BACKEND=XFORMERS.",
    ],
)
def test_a_chosen_attention_backend_refused_with_the_allowed_ones_named_is_the_backends(line: str) -> None:
    assert rules_alone(STARTED + line + "\n").diagnosis_class == "attention_backend_error"


def test_a_model_variant_or_an_adapter_the_engine_cannot_load_is_the_models_files() -> None:
    variant = "ValueError: Currently, AcmeVL only supports versions 1.0, 1.5. Got version: (2, 0)\n"
    assert rules_alone(STARTED + variant).diagnosis_class == "model_load_error"
    adapter = (
        "ValueError: While loading /adapters/support-bot/step-400, expected target modules in ['q_proj', 'v_proj'] "
        "but received ['vision_tower.fc1']\n"
    )
    assert rules_alone(STARTED + adapter).diagnosis_class == "model_load_error"


def test_silence_after_gloo_connected_the_ranks_is_a_collective_hang() -> None:
    text = (
        STARTED + "[Gloo] Rank 0 is connected to 3 peer ranks. Expected number of connected peer ranks is : 3\n"
        "[Gloo] Rank 2 is connected to 3 peer ranks. Expected number of connected peer ranks is : 3\n"
        "(Worker pid=8) INFO 05-01 10:00:03 [topology.py:1] GPU 0: NVIDIA H100 80GB HBM3\n"
    )
    assert rules_alone(text).phase == "distributed_init"
    silent = rules_alone(text, DiagnosisHints(seconds_since_output=3600))
    assert silent.diagnosis_class == "nccl_hang"


def test_a_layer_only_a_drafter_has_missing_from_the_model_is_speculative_decoding() -> None:
    traceback = _traceback(
        [("sglang/srt/model_loader/loader.py", "load_model"), ("sglang/srt/models/llama.py", "load_weights")],
        "KeyError: 'midlayer.mlp.down_proj.weight'",
    )
    assert rules_alone(traceback).diagnosis_class == "spec_decode_problem"
    target = traceback.replace("midlayer.mlp.down_proj.weight", "layers.3.mlp.down_proj.weight")
    assert rules_alone(target).diagnosis_class == "model_load_error"


def test_a_native_crash_in_speculative_decodings_own_code_is_speculative_decoding() -> None:
    crash = (
        STARTED + "free(): double free detected in tcache 2\n"
        "Fatal Python error: Aborted\n"
        "acme::eagle::TreeBuilder::expand(int)\n"
    )
    assert rules_alone(crash).diagnosis_class == "spec_decode_problem"
    elsewhere = crash.replace("acme::eagle::TreeBuilder", "acme::tokenizer::Trie")
    assert rules_alone(elsewhere).diagnosis_class == "process_killed"


def test_ucxs_crash_report_is_a_native_crash_named_by_the_library_it_shows() -> None:
    crash = (
        "[gpu07:41233:0:41290] Caught signal 7 (Bus error: nonexistent physical address)\n"
        "==== backtrace (tid:  41290) ====\n"
        " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2a4) [0x7f2c11a5c2a4]\n"
        " 1  /opt/hpc/lib/libnccl.so.2(+0x8b21c) [0x7f2c0e68b21c]\n"
    )
    diagnosis = rules_alone(crash)
    assert diagnosis.diagnosis_class == "nccl_error"
    assert diagnosis.root_cause is not None and diagnosis.root_cause.kind == "crash"
    elsewhere = crash.replace("/opt/hpc/lib/libnccl.so.2", "/opt/app/lib/libsolver.so")
    assert rules_alone(elsewhere).diagnosis_class == "process_killed"


def test_vllms_interval_acceptance_lines_are_judged_on_the_tokens_they_sum() -> None:
    def metrics(drafted: int) -> str:
        return (
            "(APIServer pid=1) INFO 05-01 10:01:00 [metrics.py:1] SpecDecoding metrics: Mean acceptance length: 1.04, "
            f"Accepted throughput: 1.1 tokens/s, Drafted throughput: 90.2 tokens/s, Accepted: 12 tokens, "
            f"Drafted: {drafted} tokens\n"
        )

    serving = STARTED + '(APIServer pid=1) INFO:     10.0.0.5:5100 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    assert rules_alone(serving + metrics(2400) + metrics(1800)).diagnosis_class == "spec_decode_problem"
    assert rules_alone(serving + metrics(30) + metrics(24)).diagnosis_class == "healthy"  # too few tokens to judge


def test_a_signal_only_another_process_sends_ending_a_silent_server_is_a_killed_process() -> None:
    serving = STARTED + '(APIServer pid=1) INFO:     10.0.0.5:5100 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    for exit_code in (-3, -10, -14):
        assert rules_alone(serving, DiagnosisHints(exit_code=exit_code)).diagnosis_class == "process_killed"


def test_the_host_running_out_of_disk_or_descriptors_is_none_of_the_engines_classes() -> None:
    disk = _process_traceback(
        "Worker pid=4",
        [("v1/worker/gpu_worker.py", "compile_or_warm_up_model"), ("compilation/backends.py", "compile")],
        "torch._inductor.exc.InductorError: OSError: [Errno 28] No space left on device",
    )
    diagnosis = rules_alone(STARTED + disk)
    assert diagnosis.diagnosis_class == "unknown"
    assert "free_disk_space" in [remedy.id for remedy in diagnosis.remedies]
    sockets = disk.replace(
        "torch._inductor.exc.InductorError: OSError: [Errno 28] No space left on device",
        "RuntimeError: [enforce fail at gloo/transport/tcp/socket.cc:24] socket: Too many open files",
    ).replace("compile_or_warm_up_model", "init_device")
    assert rules_alone(STARTED + sockets).diagnosis_class == "unknown"
    shared_memory = "host:7:9 [0] misc/shm.cc:1 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
    assert rules_alone(STARTED + shared_memory).diagnosis_class == "nccl_error"  # NCCL's segment in /dev/shm


def test_a_value_the_operator_gave_refused_after_a_colon_is_a_setting_and_from_the_models_files_is_not() -> None:
    def run(arguments: str) -> str:
        dump = f"(APIServer pid=1) INFO 05-01 10:00:01 [api_utils.py:1] non-default args: {{{arguments}}}\n"
        refused = (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            "  Value error, Unknown quantization method: hqq4. Must be one of ['awq', 'fp8', 'gptq'].\n"
        )
        return rules_alone(STARTED + dump + refused).diagnosis_class

    assert run("'model': '/models/x', 'quantization': 'hqq4'") == "config_error"
    assert run("'model': '/models/x'") == "model_load_error"  # named by the model's own configuration
    assert run("'model': '/models/x', 'hqq4': True") == "model_load_error"  # an argument's name is not its value


def test_a_package_lacking_for_a_value_the_operator_gave_is_a_setting() -> None:
    dump = "(APIServer pid=1) INFO 05-01 10:00:01 [api_utils.py:1] non-default args: {'tokenizer_backend': 'fastbpe'}\n"
    lacking = _process_traceback(
        "EngineCore pid=2",
        [("v1/engine/core.py", "__init__"), ("tokenizers/registry.py", "load_backend")],
        "ModuleNotFoundError: fastbpe is required for the 'fastbpe' tokenizer backend. Install it via `pip install "
        "fastbpe`.",
    )
    assert rules_alone(STARTED + dump + lacking).diagnosis_class == "config_error"


def test_an_exception_message_ends_where_another_log_record_begins() -> None:
    text = (
        STARTED + "(EngineCore pid=2) ERROR 05-01 10:00:05 [core.py:9] ValueError: the rope type 'yarn2' is unknown\n"
        "(EngineCore pid=2) ERROR 05-01 10:00:06 [executor.py:3] Worker proc VllmWorker-0 died unexpectedly\n"
    )
    root_cause = rules_alone(text).root_cause
    assert root_cause is not None and root_cause.message == "the rope type 'yarn2' is unknown"


def test_a_teardown_the_engine_started_after_its_server_failed_to_start_is_not_an_operators_stop() -> None:
    """The HTTP server failing to start (its configuration) is not a request failing; the engine core then gets
    SIGTERM from its own process manager, which no operator sent."""
    ready = STARTED + "(APIServer pid=1) INFO 05-01 10:00:04 [launcher.py:1] Route: /v1/completions, Methods: POST\n"
    teardown = (
        "(APIServer pid=1) INFO 05-01 10:00:05 [utils.py:1] [shutdown] Process manager: send sigterm to process "
        "EngineCore\n"
        "(EngineCore pid=2) INFO 05-01 10:00:05 [core.py:1] [shutdown] EngineCore: trigger received signal=SIGTERM\n"
    )
    failure = _traceback(
        [("vllm/entrypoints/launcher.py", "serve_http"), ("uvicorn/config.py", "load")],
        "PermissionError: [Errno 13] Permission denied",
    ).removeprefix(STARTED)
    assert rules_alone(ready + teardown + failure).diagnosis_class != "stopped"
    operator = "(APIServer pid=1) INFO 05-01 10:00:05 [launcher.py:1] [shutdown] API server: shutdown triggered\n"
    assert rules_alone(ready + operator + teardown).diagnosis_class == "stopped"


def test_vllm_plugin_headers_with_the_year_and_pytorch_c_headers_without_the_months_zero_are_peeled() -> None:
    plugin = "(Worker pid=9) ERROR 2025-11-02 08:10:01.113 [executor.py:5] ValueError: bad value"
    assert split_line(plugin).text == "ValueError: bad value" and split_line(plugin).level == "ERROR"
    cpp = "[rank3]:[E305 09:12:44.118200431 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective"
    assert split_line(cpp).text.startswith("[Rank 3] Watchdog") and split_line(cpp).level == "ERROR"


def test_gloo_failing_to_connect_every_rank_is_a_collective_error() -> None:
    line = (
        "[rank5]:[E412 10:00:02.5 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with [pair.cc:144] no error\n"
    )
    assert rules_alone(STARTED + line).diagnosis_class == "nccl_error"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "RuntimeError: Orchestrator initialization failed: Stage 1 requires 4 devices, but only 2 are available",
            "config_error",
        ),
        ("ERROR 05-01 10:00:03 [factory.py:1] Unsupported connector type: AcmeOffloadConnector", "config_error"),
        ("ERROR 05-01 10:00:03 [runner.py:1] ACLgraph sizes capture fail: RuntimeError:", "cuda_graph_capture_failure"),
    ],
)
def test_devices_a_stage_asks_beyond_the_visible_a_refused_connector_and_ascends_graph_capture(
    line: str, expected: str
) -> None:
    assert rules_alone(STARTED + line + "\n").diagnosis_class == expected


def test_nccls_older_unlabelled_info_lines_are_distributed_set_up() -> None:
    text = (
        "node-3:2210:2210 [1] INFO NET/IB : Using interface ib0 for sideband communication\n"
        "node-3:2210:2288 [1] INFO comm 0x2b11c0093600 rank 5 nranks 16\n"
    )
    assert rules_alone(text).phase == "distributed_init"
    assert rules_alone(text, DiagnosisHints(seconds_since_output=3600)).diagnosis_class == "nccl_hang"


def test_a_kernel_missing_for_the_shape_is_the_backends_even_where_it_names_the_gpu() -> None:
    def refused(message: str) -> str:
        return _traceback([("vllm/attention/backends/sparse_mla.py", "forward")], f"ValueError: {message}")

    shape = "SM100 sparse attention has no prefill kernel for this shape: num_heads=20, d_qk=320."
    assert rules_alone(refused(shape)).diagnosis_class == "attention_backend_error"
    generation = "sparse attention needs compute capability 10.0; this GPU is sm_89."
    assert rules_alone(refused(generation)).diagnosis_class == "unsupported_arch"


def test_silence_after_a_job_logged_only_its_collectives_is_a_collective_hang() -> None:
    collective = (
        "gpu-2:4101:4180 [3] NCCL INFO AllReduce: opCount 2a sendbuff 0x7f10 recvbuff 0x7f10 count 1048576 datatype 7 "
        "op 0 root 0 comm 0x7f22 [nranks=4] stream 0x55aa\n"
    )
    assert rules_alone(collective, DiagnosisHints(seconds_since_output=3600)).diagnosis_class == "nccl_hang"
    assert rules_alone(collective).diagnosis_class == "healthy"  # still talking: no silence to judge
    server = STARTED + "(APIServer pid=1) INFO 05-01 10:00:09 [launcher.py:1] Application startup complete.\n"
    idle = rules_alone(server + collective, DiagnosisHints(seconds_since_output=3600))
    assert idle.diagnosis_class == "healthy"  # a server that said it was ready is idle when silent


def test_a_task_the_operators_interrupt_cancelled_while_loading_ends_in_stopped() -> None:
    loading = STARTED + "INFO 05-01 10:00:05 [default_loader.py:1] Loading weights took 5.0 seconds\n"
    cancelled = _traceback([("vllm/v1/engine/async_llm.py", "reset_cache")], "asyncio.exceptions.CancelledError")
    interrupted = (
        "\nDuring handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/asyncio/runners.py", line 123, in run\n'
        "    raise KeyboardInterrupt()\n"
        "KeyboardInterrupt\n"
    )
    diagnosis = rules_alone(loading + cancelled.removeprefix(STARTED) + interrupted)
    assert diagnosis.diagnosis_class == "stopped"
    assert diagnosis.key_line == "KeyboardInterrupt"  # the exception's line, not the source line that raised it


def test_an_error_right_after_a_worker_died_is_the_deaths_consequence() -> None:
    serving = STARTED + '(APIServer pid=1) INFO:     10.0.0.5:5100 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    died = "(EngineCore pid=2) ERROR 05-01 10:01:00 [executor.py:3] Worker proc VllmWorker-1 died unexpectedly\n"
    consequence = _process_traceback(
        "EngineCore pid=2",
        [("v1/engine/core.py", "step"), ("distributed/device_communicators/shm_broadcast.py", "dequeue")],
        "RuntimeError: cancelled",
    )
    diagnosis = rules_alone(serving + died + consequence)
    assert diagnosis.diagnosis_class == "process_killed"
    assert diagnosis.key_line == died.rstrip("\n")  # the death, not the error it caused
    assert rules_alone(serving + consequence).diagnosis_class == "nccl_error"  # no death before it


def test_a_bare_startup_line_an_engine_adding_a_request_and_a_collectives_verdict_are_work_going_on() -> None:
    metal = "Native paged-attention Metal kernels loaded\nApplication startup complete\n"
    assert rules_alone(metal).diagnosis_class == "healthy"
    added = (
        "INFO 04-03 01:39:46 llm_engine.py:477] init engine (profile, create kv cache, warmup model) took 2.39 s\n"
        "INFO 04-03 01:40:00 engine.py:404] Added request 96572253-e97a-4c08-ab0f-495b3df97eb3.\n"
    )
    assert rules_alone(added).diagnosis_class == "healthy"
    verdict = (
        "rank 0 (GPU0): comm initialized\nrank 0 (GPU0): allreduce 0 enqueued\nrank 0 (GPU0): allreduce OK\n"
        "RCCL 2-GPU allreduce: PASS\n"
    )
    assert rules_alone(verdict).diagnosis_class == "healthy"


def test_too_little_of_a_named_devices_memory_for_the_kv_cache_is_memory() -> None:
    text = "ValueError: Paged attention: not enough Metal memory for KV cache.\n  kv_budget=-12.05GB.\n"
    assert rules_alone(text).diagnosis_class == "cuda_oom"


def test_a_kernel_built_for_one_generation_and_a_runtime_error_name_alone_are_failures() -> None:
    text = "This kernel only supports sm120.\ncudaErrorLaunchFailure: unspecified launch failure\n"
    assert rules_alone(text).diagnosis_class == "unsupported_arch"
    alone = rules_alone(
        "INFO 01-01 00:00:00 [core.py:1] Starting engine\ncudaErrorLaunchFailure: unspecified launch failure\n"
    )
    assert alone.diagnosis_class not in ("loading", "healthy")
    assert alone.root_cause is not None and alone.root_cause.type == "cudaErrorLaunchFailure"


def test_sglang_retracting_requests_and_warning_of_token_fusion_are_requests_being_served() -> None:
    retract = "".join(
        f"[2025-03-07 21:49:45 TP{rank}] Decode out of memory happened. #retracted_reqs: 1, "
        "#new_token_ratio: 0.0980 -> 0.1919\n"
        for rank in range(4)
    )
    assert rules_alone(retract).diagnosis_class == "healthy"
    fusion = "".join(
        f"[00:07:30 TP{rank}] Token fusion between input and output, try to avoid this by removing the space at the "
        "end of the input.\n"
        for rank in range(4)
    )
    assert rules_alone(fusion).diagnosis_class == "healthy"


def test_a_stall_notice_a_poster_wrapped_is_still_the_notice() -> None:
    text = (
        "EngineCore INFO shm_broadcast.py:681 No available shared memory broadcast\n"
        "block found in 60 seconds. This typically happens when some processes\n"
        "are hanging or doing some time-consuming work\n"
    )
    assert (
        rules_alone(text, DiagnosisHints(seconds_since_output=600, process_alive=True)).diagnosis_class == "nccl_hang"
    )


def test_a_kernel_missing_for_an_amd_gpu_and_a_paste_cut_inside_vllms_dtype_check_are_the_gpu_generation() -> None:
    hip = (
        "ERROR 05-15 18:58:58 [engine.py:448] HIP error: invalid device function\n"
        "ERROR 05-15 18:58:58 [engine.py:448] Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n"
    )
    assert rules_alone(hip).diagnosis_class == "unsupported_arch"
    cut = (
        "ERROR | stderr | Traceback (most recent call last):\n"
        'ERROR | stderr |   File "/usr/lib/python3/vllm/worker/worker.py", line 71, in init_model\n'
        "ERROR | stderr |     _check_if_gpu_supports_dtype(self.model_config.dtype)\n"
        'ERROR | stderr |   File "/usr/lib/python3/vllm/worker/worker.py", line 231, in _check_if_gpu_supports_dtype\n'
        "ERROR | stderr |     raise ValueError(\n"
    )
    assert rules_alone(cut).diagnosis_class == "unsupported_arch"
    # A source line that calls the check, in a traceback that failed elsewhere, is no frame of it.
    elsewhere = cut.replace(", in _check_if_gpu_supports_dtype", ", in load_model") + "ValueError: widgets\n"
    assert rules_alone(elsewhere).diagnosis_class != "unsupported_arch"


def test_a_shells_report_of_a_signal_death_is_a_death_in_english_or_chinese() -> None:
    start = "INFO 08-20 16:12:38 [api_server.py:1043] vLLM API server version 0.8.5.post1\n"
    for report in ("Segmentation fault", "段错误", "段错误 (核心已转储)", "已杀死"):
        assert rules_alone(f"{start}{report}\n").diagnosis_class == "process_killed", report
    # The words inside a sentence are no report of the shell's.
    assert rules_alone(f"{start}INFO the test covers a Segmentation fault path\n").diagnosis_class == "loading"


def test_rays_report_of_an_error_in_an_actors_creation_is_not_a_kill() -> None:
    died = (
        "(LLMRayActor pid=427151) Exception raised in creation task: The actor died because of an error raised in its "
        "creation task, ray::LLMRayActor.__init__() (pid=427151, ip=10.0.0.26)\n"
        '(LLMRayActor pid=427151)   File "/opt/openrlhf/trainer/ray/vllm_engine.py", line 54, in __init__\n'
        "(LLMRayActor pid=427151)     self.llm = vllm.LLM(*args, **kwargs)\n"
    )
    assert rules_alone(died).diagnosis_class != "process_killed"
    killed = "(raylet) The actor died unexpectedly before finishing this task.\n"
    assert rules_alone(killed).diagnosis_class == "process_killed"


def test_a_backend_refusing_a_feature_and_suggesting_another_generation_is_the_backends() -> None:
    suggested = (
        "RuntimeError: Worker failed with error 'FlashInfer backend currently does not support attention sinks, please "
        "use trtllm on blackwell or flash attention on earlier GPUs.', please check the stack trace above for the root "
        "cause\n"
    )
    assert rules_alone(suggested).diagnosis_class == "attention_backend_error"
    refused_here = "RuntimeError: FP8 is not supported on Turing GPUs, please use a Hopper GPU\n"
    assert rules_alone(refused_here).diagnosis_class == "unsupported_arch"
    # "use of" is the refusal's own subject, not a suggestion.
    assert rules_alone("RuntimeError: FlashInfer, use of sinks is not supported on sm_75\n").diagnosis_class == (
        "unsupported_arch"
    )


def test_tritons_list_of_this_architectures_fp8_types_is_the_gpu_generation_where_the_line_starts_cut() -> None:
    text = (
        "is architecture. The supported fp8 dtypes are ('fp8e5',)\")')\nERROR 02-12 09:35:06 engine.py:139] Traceback\n"
    )
    assert rules_alone(text).diagnosis_class == "unsupported_arch"


def test_a_kernel_library_without_a_build_for_this_gpu_is_the_gpu_generation_even_inside_a_capture() -> None:
    captured = "Exception: Capture cuda graph failed: No supported CUDA architectures found for major versions [12].\n"
    assert rules_alone(captured).diagnosis_class == "unsupported_arch"
    lookup = "KeyError: \"Unknown GPU architecture: gfx1151. Supported architectures: ['gfx942', 'gfx950']\"\n"
    assert rules_alone(_traceback([("aiter/jit/core.py", "get_arch")], lookup)).diagnosis_class == "unsupported_arch"
    # A capture that failed for another reason stays a capture failure.
    other = "Exception: Capture cuda graph failed: operation not permitted when stream is capturing\n"
    assert rules_alone(other).diagnosis_class == "cuda_graph_capture_failure"


def test_a_collective_librarys_port_taken_by_another_process_is_the_port() -> None:
    line = (
        "[ERROR] HCCL(4242,bench):2026-01-02-03:04:05.000.001 [hccl_socket.cc:99] [4242][Listen] "
        "listen on ip[10.0.0.7] and specific port[60001] fail. Please check whether the port is being used by "
        "other process.\n"
    )
    assert rules_alone(line).diagnosis_class == "port_in_use"


def test_nccls_warning_of_a_truncated_message_is_an_nccl_failure() -> None:
    text = "node7:88:91 [0] transport/net_socket.cc:400 NCCL WARN NET/Socket : peer 10.1.1.2<4001> message truncated\n"
    assert rules_alone(text).diagnosis_class == "nccl_error"
    # The same word on an INFO line is no failure.
    info = "node7:88:91 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC, chunks truncated to 512 KiB\n"
    assert rules_alone(info).diagnosis_class not in ("nccl_error", "unknown")


def test_an_old_nccl_tests_check_is_a_failure_not_a_start_up() -> None:
    text = (
        "./build/all_gather_perf -b 8 -e 64M -f 2 -g 4\n"
        "nThread 1 nGpus 4 minBytes 8 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
        "Cuda failure common.cu:777 'no CUDA-capable device is detected'\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class not in ("loading", "healthy")
    assert diagnosis.root_cause is not None and "no CUDA-capable device" in diagnosis.root_cause.message


def test_a_drafter_training_that_reports_the_loss_of_its_epochs_is_working() -> None:
    text = (
        "Loading target model from /models/target\n"
        "Train Epoch [1/3], position 0, pLoss: 4.81, acc: 0.21\n"
        "Train Epoch [1/3], position 1, pLoss: 4.02, acc: 0.30\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"
    bar = "Training Epoch 1:  40%|####      | 400/1000 [02:00<03:00,  3.33it/s, loss=1.95, acc=0.51]\n"
    assert rules_alone(bar).diagnosis_class == "healthy"
    # The word without a loss figure is only the job's plan.
    assert rules_alone("Train Epoch [1/3] starting\n").diagnosis_class != "healthy"


def test_children_ending_on_the_servers_own_stop_signal_are_that_stop() -> None:
    shutdown = (
        "INFO:     Shutting down\n"
        "INFO:     Waiting for application shutdown.\n"
        "INFO:     Application shutdown complete.\n"
        "INFO:     Finished server process [5150]\n"
    )
    died = "ERROR 03-01 09:00:02 multiproc_worker_utils.py:99] Worker VllmWorkerProcess pid 5151 died, exit code: "
    stopped = shutdown + died + "-15\n"
    assert rules_alone(stopped).diagnosis_class == "stopped"
    # SIGKILL is nothing the shutdown sends: the child was killed.
    killed = shutdown + died + "-9\n"
    assert rules_alone(killed).diagnosis_class == "process_killed"


def test_a_triton_kernel_short_of_shared_memory_is_no_device_memory_shortfall() -> None:
    plain = (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: "
        "65536. Reducing block sizes or `num_stages` may help.\n"
    )
    assert rules_alone(plain).diagnosis_class == "attention_backend_error"
    wrapped = "torch.OutOfMemoryError: out of resource: triton_tem_fused_3 Required: 131072 Hardware limit:99000\n"
    assert rules_alone(wrapped).diagnosis_class == "attention_backend_error"
    assert rules_alone("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n").diagnosis_class == (
        "cuda_oom"
    )


def test_nccl_tests_rows_tagged_by_open_mpi_are_collectives_that_ran() -> None:
    text = (
        "  [1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        "  [1,0]<stdout>:         256            64     float     sum      -1    51.20    0.01    0.01      0"
        "    50.9    0.01    0.01      0\n"
        "  [1,0]<stdout>:         512           128     float     sum      -1    52.02    0.01    0.02      0"
        "    51.7    0.01    0.02      0\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"


def test_a_stall_notice_followed_only_by_answered_polls_is_still_a_stall() -> None:
    ready = (
        "(APIServer pid=7) INFO 04-01 10:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    )
    notice = (
        "(APIServer pid=7) INFO 04-01 10:09:00 [shm_broadcast.py:600] No available shared memory broadcast block "
        "found in 60 seconds. This typically happens when some processes are hanging.\n"
    )
    poll = '(APIServer pid=7) INFO:     10.0.0.9:5123 - "GET /v1/batches/batch_0af3 HTTP/1.1" 200 OK\n'
    assert rules_alone(ready + notice + poll * 3).diagnosis_class == "nccl_hang"
    # Work after the notice (a generation answered) shows the engine went on.
    answered = '(APIServer pid=7) INFO:     10.0.0.9:5123 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    assert rules_alone(ready + notice + poll + answered).diagnosis_class == "healthy"


def test_torch_elastics_agent_still_failing_its_keep_alive_is_a_hang() -> None:
    heartbeat = (
        "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'node7_187281_0' has failed to send "
        "a keep-alive heartbeat to the rendezvous 'none' due to an error of type RendezvousConnectionError.\n"
    )
    assert rules_alone(heartbeat * 3).diagnosis_class == "nccl_hang"
    raised = (
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
        "failed. See inner exception for details.\n"
    )
    assert rules_alone(heartbeat + "Traceback (most recent call last):\n" + raised).diagnosis_class == "nccl_error"


def test_an_nccl_warning_that_something_cannot_be_done_is_a_failure() -> None:
    captured = (
        "NCCL WARN NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3 or if the "
        "installed CUDA driver < R465.\n"
    )
    assert rules_alone(captured).diagnosis_class == "nccl_error"
    register = (
        "nid003981:2023029:2023286 [0] register_mr_buffers:647 NCCL WARN NET/OFI Unable to register memory (type = 2) "
        "for device 7. RC: -22\n"
    )
    assert rules_alone(register).diagnosis_class == "nccl_error"
    assert rules_alone("host:1:2 [0] NCCL INFO Channel 00/02 : 0 1\n").diagnosis_class == "loading"
