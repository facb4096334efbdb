"""Progress of jobs that are not servers, drafters' weights, warm-ups and watchdogs, in words of their own.

Each log is short and invented in the engines' style; the rules run alone (an empty learned model) so that the
checks show what the rules decide.
"""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_text
from tools.logs.learned import LearnedModel

STALE = DiagnosisHints(seconds_since_output=3600)


def rules_alone(text: str, hints: DiagnosisHints | None = None) -> Diagnosis:
    return diagnose_text(text, hints, model=LearnedModel())


def test_rows_of_an_nccl_tests_table_are_collectives_that_ran() -> None:
    header = (
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw\n"
    )
    rows = (
        "     1048576        262144     float     sum      -1    61.20   17.13   32.12      0    60.87   17.23\n"
        "     2097152        524288     float     sum      -1    98.41   21.31   39.96      0    97.55   21.50\n"
    )
    assert rules_alone(header + rows).diagnosis_class == "healthy"
    assert rules_alone(header + rows, STALE).diagnosis_class == "healthy"  # the table ran, silence is its end
    unchecked = rows.replace("      0    ", "    N/A    ")
    assert rules_alone(header + unchecked).diagnosis_class == "healthy"
    assert rules_alone(header).diagnosis_class == "loading"  # no row yet
    # Releases before 2.0 printed the largest error: float sums carry rounding errors and are still right.
    old_release = (
        "          64            16     float     sum    163.7    0.00    0.00  2e-07    164.0    0.00    0.00  2e-07\n"
        "         128            32     float     sum    164.3    0.00    0.00  2e-07    164.0    0.00    0.00  2e-07\n"
    )
    assert rules_alone(old_release).diagnosis_class == "healthy"
    assert rules_alone(old_release.replace("2e-07", "4e+01")).diagnosis_class == "loading"  # values far off: no row


def test_a_job_that_reports_its_work_completed_is_past_start_up() -> None:
    start = (
        "NCCL version 2.24.3+cuda12.4\n"
        "cxi0:4121:4121 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "Size (B)    Latency (us)    Bandwidth (GB/s)\n"
        "8388608     417.339655      22.793149\n"
    )
    assert rules_alone(start).diagnosis_class == "loading"  # a table is not yet a job that ended
    for ending in ("=== All Tests Complete ===\n", "Test completed successfully\n", "All tests passed.\n"):
        assert rules_alone(start + ending).diagnosis_class == "healthy", ending
        assert rules_alone(start + ending, STALE).diagnosis_class == "healthy", ending  # silence is its end
    assert rules_alone(start + "Test completed with errors\n").diagnosis_class != "healthy"
    benchmark = (
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "============ Serving Benchmark Result ============\n"
        "Successful requests:                     100\n"
    )
    assert rules_alone(benchmark).diagnosis_class == "healthy"


def test_vllm_omnis_per_request_timing_is_serving() -> None:
    text = (
        "(APIServer pid=4) INFO 04-01 10:00:00 [omni_base.py:9] [OmniTiming] req=chatcmpl-7f2 total=3.10s "
        "preprocess=0.20s engine=2.90s stages=[0:ar=2.10s]\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"


def test_a_drafters_loader_naming_weights_it_has_no_place_for_is_the_drafters() -> None:
    text = (
        "[2026-01-05 10:00:00] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16\n"
        "[2026-01-05 10:00:02] MTP draft: unexpected weight 'mtp.1.ffn.w2.weight' -> 'layers.1.mlp.down_proj.weight'\n"
        "[2026-01-05 10:00:02] MTP draft: unexpected weight 'mtp.1.ffn.w3.weight' -> 'layers.1.mlp.up_proj.weight'\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "spec_decode_problem", diagnosis.why


def _unloaded(names: str) -> str:
    return (
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 9, in '
        "load_weights\n"
        f"ValueError: Following weights were not initialized from checkpoint: {{{names}}}\n"
    )


def test_weights_left_unloaded_that_are_a_drafters_own_layers_are_the_drafters() -> None:
    drafter = rules_alone(_unloaded("'model.enorm.weight', 'model.hnorm.weight', 'model.eh_proj.weight'"))
    assert drafter.diagnosis_class == "spec_decode_problem", drafter.why
    target = rules_alone(_unloaded("'model.layers.3.mlp.gate.weight', 'model.norm.weight'"))
    assert target.diagnosis_class == "model_load_error", target.why


def test_a_failure_in_a_function_that_prepares_the_warm_up_is_the_warm_ups() -> None:
    text = (
        "[2026-01-05 10:00:00] Load weight end. type=QwenImagePipeline\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 90, in __init__\n'
        "    self.build_first_warmup_batch()\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 140, in build_first_warmup_batch\n'
        "    batch = Batch(kind=kind)\n"
        "TypeError: Batch.__init__() got an unexpected keyword argument 'kind'\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "warmup_failed", diagnosis.why


def test_what_sglangs_watchdog_prints_when_it_fires_is_a_hang_without_its_first_line() -> None:
    text = (
        "[2026-01-05 10:20:00] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, gen throughput: 31.2\n"
        "[2026-01-05 10:25:00] self.cur_batch.batch_size()=1\n"
        "self.cur_batch.reqs=[Req(rid=9f1c, input_ids=[11, 12, 13])]\n"
        "[2026-01-05 10:25:00] Pyspy dump for PID 812:\n"
        'Thread 812 (idle): "MainThread"\n'
        "    replay (cuda_graph_runner.py:640)\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "nccl_hang", diagnosis.why


def test_pytorchs_nccl_process_group_starting_is_distributed_set_up() -> None:
    text = (
        "I0301 12:00:00.100200 5100 ProcessGroupNCCL.cpp:843] [Rank 1] NCCL watchdog thread started!\n"
        "I0301 12:00:00.100900 5099 ProcessGroupNCCL.cpp:666] [Rank 1] ProcessGroupNCCL initialized with following "
        "options:\n"
        "NCCL_ASYNC_ERROR_HANDLING: 1\n"
        "TIMEOUT(ms): 60000\n"
    )
    assert rules_alone(text).phase == "distributed_init"
    assert rules_alone(text, STALE).diagnosis_class == "nccl_hang"


def test_an_error_deep_inside_building_the_model_from_its_configuration_is_the_checkpoints() -> None:
    inner = [("layers/rotary_embedding/__init__.py", "get_rope")] + [("models/qwen2.py", "__init__")] * 5
    inner += [("models/utils.py", "make_layers"), ("models/qwen2.py", "__init__"), ("models/qwen2.py", "__init__")]
    outer = [("model_loader/utils.py", "initialize_model"), ("model_loader/base_loader.py", "load_model")]
    frames = "".join(
        f'  File "/usr/lib/python3.12/site-packages/vllm/model_executor/{path}", line 4, in {function}\n'
        for path, function in reversed(inner + outer)
    )
    text = (
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        f"Traceback (most recent call last):\n{frames}ValueError: Unknown RoPE scaling type 'yarn2'\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "model_load_error", diagnosis.why
    shallow = text.replace("initialize_model", "run_once")
    assert rules_alone(shallow).diagnosis_class == "unknown"  # nothing says the model was being built


def test_the_http_servers_shutdown_shows_a_server_that_was_up_even_without_its_ready_line() -> None:
    text = (
        "INFO 03-20 14:21:01 [launcher.py:74] Shutting down FastAPI HTTP server.\n"
        "INFO:     Shutting down\n"
        "INFO:     Waiting for application shutdown.\n"
    )
    assert rules_alone(text).diagnosis_class == "stopped"
    executor_only = "INFO 03-20 14:21:01 [multiproc_executor.py:4] [shutdown] Executor: waiting for worker exit\n"
    assert rules_alone(executor_only).diagnosis_class != "stopped"  # the executor stops when start-up fails too


def test_a_death_reported_after_an_offline_run_processed_every_prompt_is_its_teardown() -> None:
    done = (
        "INFO 01-07 20:00:58 [llm.py:295] Supported_tasks: ['generate']\n"
        "Processed prompts: 100%|██████████| 8/8 [00:01<00:00,  6.10it/s, est. speed input: 40.1 toks/s]\n"
        "Prompt: 'Hi', Generated text: ' there'\n"
    )
    died = (
        "ERROR 01-07 20:01:00 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down\n"
    )
    assert rules_alone(done + died).diagnosis_class == "healthy"
    unfinished = done.replace("100%", " 50%").replace("8/8", "4/8")
    assert rules_alone(unfinished + died).diagnosis_class == "process_killed"
    crashed = (
        "Traceback (most recent call last):\n"
        '  File "/opt/run.py", line 3, in main\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    assert rules_alone(done + crashed).diagnosis_class not in ("healthy", "loading", "stopped")


def test_a_stall_notice_followed_by_a_start_up_milestone_was_slow_work_that_finished() -> None:
    stalled = (
        "(Worker pid=9) INFO 04-15 13:41:24 [cpu_model_runner.py:116] Warming up model for the compilation...\n"
        "(EngineCore pid=7) INFO 04-15 13:42:25 [shm_broadcast.py:681] No available shared memory broadcast block "
        "found in 60 seconds. This typically happens when some processes are hanging.\n"
    )
    went_on = "(Worker pid=9) INFO 04-15 13:43:42 [monitor.py:76] Initial profiling/warmup run took 107.62 s\n"
    assert rules_alone(stalled).diagnosis_class == "nccl_hang"
    assert rules_alone(stalled + went_on).diagnosis_class == "loading"


def test_sglangs_own_report_of_a_failed_piecewise_cuda_graph_names_its_remedy() -> None:
    text = (
        "[2026-05-22 04:54:32 TP0] Piecewise CUDA Graph failed with error: Tensor match failed for Tensor<8>\n"
        "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"
        "[2026-05-22 04:54:32 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 3811, in run_scheduler_process\n'
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "cuda_graph_capture_failure", diagnosis.why
    assert diagnosis.remedies[0].id == "disable_piecewise_cuda_graph"


def test_the_engines_own_kv_pool_accounting_check_is_a_bug_not_a_memory_shortfall() -> None:
    text = (
        "[2026-01-05 10:20:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 900, in check_memory\n'
        "ValueError: token_to_kv_pool_allocator memory leak detected! available_size=100, size=4096\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.confidence >= 0.5, diagnosis.why


def test_an_offline_engine_adding_a_request_of_the_applications_own_id_is_serving() -> None:
    started = (
        "INFO 03-26 14:47:15 [core.py:151] init engine (profile, create kv cache, warmup model) took 27.91 seconds\n"
    )
    added = "INFO 03-26 14:47:24 [async_llm.py:221] Added request req-001.\n"
    assert rules_alone(started).diagnosis_class == "loading"
    assert rules_alone(started + added).diagnosis_class == "healthy"
    # An id is what it names: words after "Added request" are no request.
    assert rules_alone(started + "INFO 03-26 14:47:24 [x.py:1] Added request queue.\n").diagnosis_class == "loading"
