"""General rules of diagnosis, each shown on a log it was not written from.

The logs here are short and use the engines' real wording (from their released source and public
issue threads), but they are not corpus excerpts: each rule must hold for a log whose exact lines it
has never seen, which is what a rule that generalises means. Where a rule leaves an error unexplained
the learned model would speak; those checks run the rules alone (an empty model), so that they show
what the rules decide.
"""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_text
from tools.logs.events import parse_events
from tools.logs.learned import LearnedModel


def rules_alone(text: str) -> Diagnosis:
    return diagnose_text(text, model=LearnedModel())


def test_argument_checks_of_the_engine_are_config_errors() -> None:
    argparse_rejection = (
        "usage: vllm serve [-h] [--dtype {auto,half,float16,bfloat16,float,float32}]\n"
        "vllm serve: error: argument --dtype: invalid choice: 'bf32' (choose from 'auto', 'half')\n"
    )
    diagnosis = diagnose_text(argparse_rejection)
    assert diagnosis.diagnosis_class == "config_error"
    assert diagnosis.remedies[0].id == "check_flags" and diagnosis.remedies[0].action == {"needs_human": True}
    server_args_check = (
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/launch_server.py", line 10, in <module>\n'
        "    server_args = prepare_server_args(sys.argv[1:])\n"
        '  File "/opt/sglang/python/sglang/srt/server_args.py", line 3100, in check_server_args\n'
        '    assert self.dp_size > 1, "dp_size must be larger than 1"\n'
        "AssertionError: dp_size must be larger than 1 when dp attention is enabled\n"
    )
    diagnosis = diagnose_text(server_args_check)
    assert diagnosis.diagnosis_class == "config_error"
    assert diagnosis.root_cause is not None and diagnosis.root_cause.component == "engine_args"


def test_an_attention_kernel_that_rejects_the_model_is_an_attention_backend_error() -> None:
    text = (
        "(EngineCore_DP0 pid=4121) ERROR 04-10 09:12:41 [core.py:708] ValueError: Selected backend "
        "AttentionBackendEnum.FLASHINFER is not valid for this configuration. Reason: ['head_size not supported']\n"
    )
    diagnosis = diagnose_text(text)
    assert diagnosis.diagnosis_class == "attention_backend_error"
    assert diagnosis.remedies[0].action == {"set_flag": {"attention_backend": "triton"}}
    assert {"unset_flag": ["kv_cache_dtype"]} in [remedy.action for remedy in diagnosis.remedies]


def test_an_attention_kernel_that_rejects_the_gpu_is_unsupported_arch() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/srt/layers/attention/flashattention_backend.py", line 300, in __init__\n'
        "    assert major >= 8\n"
        "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90.\n"
    )
    assert diagnose_text(text).diagnosis_class == "unsupported_arch"


def test_a_failed_build_of_an_attention_kernel_is_an_attention_backend_error_and_others_are_not() -> None:
    def build_failure(module: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            f'  File "/venv/lib/python3.12/site-packages/flashinfer/{module}.py", line 50, in get_module\n'
            '  File "/venv/lib/python3.12/site-packages/flashinfer/jit/core.py", line 120, in build\n'
            "RuntimeError: Ninja build failed. Ninja output:\n"
        )

    assert diagnose_text(build_failure("decode")).diagnosis_class == "attention_backend_error"
    assert rules_alone(build_failure("sampling")).diagnosis_class != "attention_backend_error"


def test_memory_accounting_without_the_words_out_of_memory_is_cuda_oom() -> None:
    for accounting in (
        "INFO 05-01 10:00:00 [gpu_worker.py:232] Available KV cache memory: -2.31 GiB",
        "INFO 05-01 10:00:00 [executor_base.py:111] # GPU blocks: 0, # CPU blocks: 2048",
    ):
        diagnosis = diagnose_text(accounting + "\n[rank0]: Traceback (most recent call last):\n")
        assert diagnosis.diagnosis_class == "cuda_oom", accounting
        assert diagnosis.key_line == accounting


def test_a_native_crash_is_process_killed_unless_its_frames_name_a_component() -> None:
    abort = (
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f00 (most recent call first):\n"
        '  File "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1500 in _call_impl\n'
    )
    assert diagnose_text(abort).diagnosis_class == "process_killed"
    interpreter_check = abort.replace("Aborted", "_PyObject_AssertFailed: object already tracked")
    checked = diagnose_text(interpreter_check)  # not a death by a signal: none of the classes, however worded
    assert checked.diagnosis_class == "unknown" and checked.decided_by == "rules" and checked.confidence >= 0.5
    in_nccl = (
        "!!!!!!! Segfault encountered !!!!!!!\n"
        '  File "plugin/net.cc", line 216, in ncclNetPluginInit\n'
        '  File "plugin/net.cc", line 362, in ncclNetInit(ncclComm*)\n'
    )
    events = parse_events(in_nccl.splitlines())
    assert [event.kind for event in events.events] == ["crash"]
    assert diagnose_text(in_nccl).diagnosis_class == "nccl_error"


def test_a_mismatch_is_a_spec_decode_problem_only_when_speculative_decoding_is_on() -> None:
    mismatch = (
        "RuntimeError: Error(s) in loading state_dict for LlamaModel:\n"
        "\tsize mismatch for fc.weight: copying a param with shape torch.Size([4096, 12288]) from checkpoint, "
        "the shape in current model is torch.Size([5120, 15360]).\n"
    )
    on = "server_args=ServerArgs(model_path='/m', speculative_algorithm='EAGLE3', speculative_draft_model_path='/d')\n"
    off = "server_args=ServerArgs(model_path='/m', speculative_algorithm=None, speculative_draft_model_path=None)\n"
    assert diagnose_text(on + mismatch).diagnosis_class == "spec_decode_problem"
    assert diagnose_text(off + mismatch).diagnosis_class == "model_load_error"


def test_any_socket_address_in_use_is_port_in_use() -> None:
    text = "zmq.error.ZMQError: Address already in use (addr='tcp://*:5557')\n"
    assert diagnose_text(text).diagnosis_class == "port_in_use"


def test_a_one_line_error_after_the_last_milestone_outranks_the_milestone() -> None:
    text = (
        "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model /models/x...\n"
        "(VllmWorker pid=9) ERROR 01-01 00:00:05 [worker.py:9] Exception in worker while processing method "
        "load_model: CUDA driver error: invalid argument, Traceback (most recent call last):\n"
    )
    diagnosis = diagnose_text(text)
    assert diagnosis.diagnosis_class != "loading"
    assert diagnosis.root_cause is not None and "CUDA driver error" in diagnosis.root_cause.message
    assert diagnosis.line_number == 2


def test_a_wrapper_that_names_no_error_is_not_taken_as_the_error() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/srt/mem_cache/common.py", line 412, in alloc_token_slots\n'
    )
    root = diagnose_text(text).root_cause
    assert root is not None and root.message == "" and root.component == "kv_cache"


def test_a_bare_assertion_in_the_cache_code_is_about_its_size_only_when_its_check_is() -> None:
    """Python prints the failing ``assert`` statement under the innermost frame: a check of the cache's state is an
    engine bug (no class), a check of free room is the cache running out of memory."""

    def assertion(statement: str) -> str:
        return (
            "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/opt/sglang/python/sglang/srt/managers/schedule_policy.py", line 878, in add_one_req\n'
            "    new_indices, req.last_node = self.tree_cache.init_load_back(\n"
            '  File "/opt/sglang/python/sglang/srt/mem_cache/swa_component.py", line 448, in build_transfers\n'
            f"    {statement}\n"
            "AssertionError\n"
        )

    state = diagnose_text(
        assertion("assert node.host_value is not None or node.value is not None"), model=LearnedModel()
    )
    assert state.diagnosis_class == "unknown", state.why
    room = diagnose_text(assertion("assert self.available_size() >= need_size"), model=LearnedModel())
    assert room.diagnosis_class == "cuda_oom", room.why
    prefix = "(EngineCore_DP0 pid=9) ERROR 01-01 00:00:00 [core.py:1] "
    logged = "".join(prefix + line + "\n" for line in assertion("assert node.value is not None").splitlines())
    assert diagnose_text(logged, model=LearnedModel()).diagnosis_class == "unknown"  # each line under a log prefix


def test_silence_after_distributed_initialisation_is_a_hang_only_when_stale() -> None:
    text = (
        "INFO 09-03 02:15:41 [multiproc_worker_utils.py:215] Worker ready; awaiting tasks\n"
        "INFO 09-03 02:15:42 [pynccl.py:63] vLLM is using nccl==2.21.5\n"
    )
    assert diagnose_text(text).diagnosis_class == "loading"
    stale = DiagnosisHints(seconds_since_output=3600.0)
    assert diagnose_text(text, stale).diagnosis_class == "nccl_hang"
    loading_weights = text + "INFO 09-03 02:15:50 [model_runner.py:1] Starting to load model /models/x...\n"
    assert diagnose_text(loading_weights, stale).diagnosis_class == "loading"


def test_silence_during_cuda_graph_capture_is_a_capture_failure_only_when_stale() -> None:
    text = (
        "INFO 05-01 10:00:00 [gpu_model_runner.py:2000] Model loading took 1.2 GiB and 3.1 seconds\n"
        "INFO 05-01 10:00:09 [gpu_model_runner.py:2100] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)\n"
    )
    assert diagnose_text(text).diagnosis_class == "loading"
    stale = diagnose_text(text, DiagnosisHints(seconds_since_output=3600.0))
    assert stale.diagnosis_class == "cuda_graph_capture_failure" and "Capturing CUDA graphs" in (stale.key_line or "")


def test_an_unexplained_error_is_unknown_with_the_likeliest_classes_and_why() -> None:
    text = (
        "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model /models/x...\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/model_executor/models/llama.py", line 500, in forward\n'
        "RuntimeError: something nobody has seen before\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unknown"
    assert [alternative.diagnosis_class for alternative in diagnosis.alternatives] == ["model_load_error"]
    assert "weights were loading" in diagnosis.alternatives[0].why
    assert diagnosis.confidence < 0.5  # an unexplained error is rarely a class no rule knows


def test_a_kernel_built_just_in_time_that_cannot_be_linked_is_a_failed_warm_up() -> None:
    text = (
        "INFO 03-02 10:00:01 [gpu_model_runner.py:1347] Model loading took 7.1 GiB and 12.4 seconds\n"
        "INFO 03-02 10:00:09 [backends.py:430] Dynamo bytecode transform time: 6.02 s\n"
        "/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
        "collect2: error: ld returned 1 exit status\n"
        "ERROR 03-02 10:00:11 [core.py:396] EngineCore failed to start.\n"
        "ERROR 03-02 10:00:11 [core.py:396] Traceback (most recent call last):\n"
        'ERROR 03-02 10:00:11 [core.py:396]   File "/env/lib/python3.11/site-packages/vllm/v1/engine/core.py", '
        "line 387, in run_engine_core\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "warmup_failed", diagnosis.why
    assert "link_cuda_libraries" in [remedy.id for remedy in diagnosis.remedies]


def test_a_store_wait_that_timed_out_is_a_peer_that_never_arrived() -> None:
    frames = (
        '[rank1]:   File "/env/lib/python3.11/site-packages/vllm/distributed/utils.py", line 197, in broadcast_obj\n'
        "[rank1]:     recv_obj = pickle.loads(self.store.get(key))\n"
    )
    waited = "[rank1]: torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /broadcast_from/0/12\n"
    assert rules_alone("[rank1]: Traceback (most recent call last):\n" + frames + waited).diagnosis_class == "nccl_hang"
    wrapped = (
        "[rank2]: torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving ncclUniqueId "
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n"
    )
    assert rules_alone(wrapped).diagnosis_class == "nccl_hang"


def test_a_name_the_distributed_layer_lacks_is_a_version_mismatch_not_a_failed_collective() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.11/site-packages/trainer/rollout.py", line 58, in init_process_group\n'
        "    return self.llm.collective_rpc(\n"
        '  File "/env/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 495, in collective_rpc\n'
        "    executor = self.llm_engine.model_executor\n"
        "AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class not in ("nccl_error", "nccl_hang"), diagnosis.why
    assert diagnosis.root_cause is not None and diagnosis.root_cause.type == "AttributeError"


def test_a_model_configuration_that_is_not_json_is_the_models_files_not_the_arguments() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1104, in create_model_config\n'
        "    return ModelConfig(\n"
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, Expecting property name enclosed in double quotes: line 14 column 3 (char 388) "
        "[type=value_error, input_value=ArgsKwargs((), {'model': '/models/local-vl'}), input_type=ArgsKwargs]\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "model_load_error", diagnosis.why
    rejected = text.replace(
        "Expecting property name enclosed in double quotes: line 14 column 3 (char 388)",
        "max_model_len must be at least 1",
    )
    assert rules_alone(rejected).diagnosis_class == "config_error"


def test_a_ranks_store_retries_after_another_ranks_error_are_its_consequence() -> None:
    text = (
        "(VllmWorker rank=0 pid=3301) ERROR 02-11 08:00:03 [multiproc_executor.py:470] ValueError: Free memory on "
        "device (6.2/23.6 GiB) on startup is less than desired GPU memory utilization (0.9, 21.2 GiB). Decrease GPU "
        "memory utilization or reduce GPU memory used by other processes.\n"
        "[W211 08:00:03.120044 TCPStore.cpp:343] [c10d] TCP client failed to connect/validate to host 127.0.0.1:41021 "
        "- retrying (try=0, timeout=600000ms, delay=512ms): Connection reset by peer\n"
    )
    assert rules_alone(text).diagnosis_class == "cuda_oom"
    alone = text.splitlines(keepends=True)[1] * 3  # with no error before them, the retries are the failure
    assert rules_alone(alone).diagnosis_class == "nccl_error"


def test_the_engines_own_dummy_request_failing_is_a_failed_warm_up() -> None:
    text = (
        "(APIServer pid=51) INFO 07-01 10:00:02 [diffusion_engine.py:120] Model loaded; running a dummy request.\n"
        "(APIServer pid=51) ERROR 07-01 10:00:09 [diffusion_engine.py:482] Execution failed for image request "
        "dummy_warmup_0\n"
        "(APIServer pid=51) ERROR 07-01 10:00:09 [diffusion_engine.py:482] Traceback (most recent call last):\n"
        '(APIServer pid=51) ERROR 07-01 10:00:09 [diffusion_engine.py:482]   File "/env/lib/python3.12/site-packages/'
        'omni/diffusion/runner.py", line 211, in step\n'
        "(APIServer pid=51) ERROR 07-01 10:00:09 [diffusion_engine.py:482] torch._dynamo.exc.Unsupported: call_method "
        "UserDefinedObjectVariable(Scheduler) step\n"
    )
    assert rules_alone(text).diagnosis_class == "warmup_failed"


SERVING_THEN = (
    "(APIServer pid=1) INFO 03-04 11:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 812.0 tokens/s, Avg "
    "generation throughput: 2210.4 tokens/s, Running: 31 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%\n"
)


def test_after_the_engine_died_the_api_servers_own_reports_are_no_recovery() -> None:
    died = (
        "(EngineCore_DP0 pid=210) ERROR 03-04 11:00:07 [multiproc_executor.py:150] Worker proc VllmWorker-5 died "
        "unexpectedly, shutting down executor.\n"
        "(VllmWorker TP2 pid=330) INFO 03-04 11:00:07 [multiproc_executor.py:520] Parent process exited, terminating "
        "worker\n"
    )
    probe = '(APIServer pid=1) INFO:     10.0.0.7:51130 - "GET /metrics HTTP/1.1" 200 OK\n'
    later = SERVING_THEN.replace("11:00:00", "11:00:10") + probe
    diagnosis = rules_alone(SERVING_THEN + died + later)
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why
    assert diagnosis.key_line is not None and "died unexpectedly" in diagnosis.key_line


def test_a_stalled_engine_behind_a_server_that_answers_probes_is_a_hang_and_answered_requests_a_recovery() -> None:
    notice = (
        "(EngineCore_DP0 pid=210) INFO 03-04 11:01:00 [shm_broadcast.py:705] No available shared memory broadcast "
        "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
        "time-consuming work (e.g. compilation, weight/kv cache quantization).\n"
    )
    probe = '(APIServer pid=1) INFO:     127.0.0.1:{port} - "GET /metrics HTTP/1.1" 200 OK\n'
    probes = "".join(probe.format(port=40000 + number) for number in range(6))
    assert rules_alone(probes + notice + probes).diagnosis_class == "nccl_hang"
    answered = '(APIServer pid=1) INFO:     10.0.0.9:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    answers = "".join(answered.format(port=50000 + number) for number in range(3))
    assert rules_alone(probes + notice + answers).diagnosis_class == "healthy"


def test_no_progress_notices_while_a_kernel_builds_are_start_up_until_the_build_has_had_its_time() -> None:
    build = (
        "(Worker_TP0 pid=269) INFO 09-10 08:52:00 [model_runner.py:408] Model loading took 78.8 GiB memory and 232.4 "
        "seconds\n"
        "(Worker_TP0 pid=269) 2026-09-10 08:54:01,926 - INFO - core.py:447 - flashinfer.jit: Building JIT module "
        "fp8_gemm_sm120; this can take several minutes on first use.\n"
    )
    notice = (
        "(EngineCore pid=197) INFO 09-10 08:55:01 [shm_broadcast.py:801] No available shared memory broadcast block "
        "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming "
        "work (e.g. compilation, weight/kv cache quantization).\n"
    )
    assert rules_alone(build + notice * 3).diagnosis_class == "loading"
    assert rules_alone(build + notice * 12).diagnosis_class == "nccl_hang"  # longer than a first build takes


def test_a_data_parallel_rank_placed_beyond_the_visible_devices_is_a_setting_asking_for_too_many() -> None:
    text = (
        "(Worker pid=2210) ERROR 07-10 09:16:57 [multiproc_executor.py:898] WorkerProc failed to start.\n"
        "(Worker pid=2210) ERROR 07-10 09:16:57 [multiproc_executor.py:898] Traceback (most recent call last):\n"
        '(Worker pid=2210) ERROR 07-10 09:16:57 [multiproc_executor.py:898]   File "/env/lib/python3.12/site-packages/'
        'vllm/v1/worker/gpu_worker.py", line 214, in init_device\n'
        "(Worker pid=2210) ERROR 07-10 09:16:57 [multiproc_executor.py:898] AssertionError: DP adjusted local rank 2 "
        "is out of bounds for 2 devices.\n"
    )
    assert rules_alone(text).diagnosis_class == "config_error"


def test_a_client_that_gave_up_reaching_the_rendezvous_store_is_a_failed_connection() -> None:
    text = (
        "[E311 04:00:01.120044 socket.cpp:957] [c10d] The client socket has timed out after 600s while trying to "
        "connect to (10.0.3.7, 29500).\n"
        "Traceback (most recent call last):\n"
        '  File "/env/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.DistNetworkError: The client socket has timed out after 600s while trying to connect to "
        "(10.0.3.7, 29500).\n"
    )
    assert rules_alone(text).diagnosis_class == "nccl_error"


def test_rays_report_of_the_processes_its_memory_monitor_killed_is_a_kill_from_outside() -> None:
    text = (
        "2026-02-01 10:00:02,100 ERR cli.py:72 -- Job 'raysubmit_abc123' failed\n"
        "PID     MEM(GB) COMMAND\n"
        "7101    21.40   ray::RolloutEngine\n"
        "7102    21.12   ray::RolloutEngine\n"
        "Refer to the documentation on how to address the out of memory issue: "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory "
        "on this node or reducing task parallelism by requesting more CPUs per task.\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why
    assert "check_host_memory" in [remedy.id for remedy in diagnosis.remedies]


def test_a_pipeline_stages_warning_is_no_failure_and_its_offline_orchestrator_ready_is_ready() -> None:
    text = (
        "INFO 01-16 05:15:09 [omni.py:295] [Orchestrator] Stage-0 reported ready\n"
        "INFO 01-16 05:15:09 [omni.py:321] [Orchestrator] All stages initialized successfully\n"
        "(Worker pid=7711) [Stage-1] WARNING 01-16 05:15:26 [talker.py:228] Using sdpa attention backend "
        "(flash_attention_2 not available or failed)\n"
        "(Worker pid=7712) [Stage-2] INFO 01-16 05:16:20 [mrope.py:452] Multimodal token idx changed!\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "healthy", diagnosis.why
    server = text.replace("[Orchestrator] All", "[AsyncOrchestrator] All")
    assert rules_alone(server).diagnosis_class == "loading"  # its API server has still to start


def test_the_engine_core_stopping_in_order_is_a_stop_and_its_clients_report_of_its_death_that_stop() -> None:
    text = (
        "Processed prompts:  50%|█████     | 2/4 [00:03<00:03,  1.52s/it]\n"
        "(EngineCore pid=811) INFO 02-09 08:10:00 [core.py:1201] Shutdown initiated (timeout=0)\n"
        "(EngineCore pid=811) INFO 02-09 08:10:00 [core.py:1224] Shutdown complete\n"
        "ERROR 02-09 08:10:01 [core_client.py:704] Engine core proc EngineCore died unexpectedly, shutting down "
        "client.\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "stopped", diagnosis.why
    failed = text.replace(
        "ERROR 02-09 08:10:01",
        "ERROR 02-09 08:10:01 [core.py:900] Traceback (most recent call last):\n"
        'ERROR 02-09 08:10:01 [core.py:900]   File "/env/lib/python3.12/site-packages/vllm/v1/engine/core.py", '
        "line 890, in shutdown\n"
        "ERROR 02-09 08:10:01 [core.py:900] RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "ERROR 02-09 08:10:01",
    )
    assert rules_alone(failed).diagnosis_class != "stopped"  # an error after the shutdown began still counts
