"""How an engine ended, in the diagnosis: the supervisor's last line, the kernel's OOM-killer lines, an orderly
stop, and the lines around a death after ready (real vLLM logs from tests/data/real_vllm); how far a start-up got
(short logs invented in the engines' style, the rules alone deciding)."""

from __future__ import annotations

from pathlib import Path

from tools.hosts.supervise import LOG_PREFIX
from tools.logs.diagnose import DiagnosisHints, diagnose_text
from tools.logs.kernel import log_pids, oom_kill_lines
from tools.logs.learned import LearnedModel

REAL = Path(__file__).resolve().parent / "data" / "real_vllm"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_the_supervisors_last_line_tells_how_the_process_ended() -> None:
    stopped = diagnose_text(real("graceful-stop-sigterm.log") + f"\n{LOG_PREFIX} process 4242 exited with code 0\n")
    assert (stopped.diagnosis_class, stopped.exit_code) == ("stopped", 0)
    died = diagnose_text(real("worker-sigkill-after-ready.log") + f"\n{LOG_PREFIX} process 4242 exited with code 0\n")
    assert died.diagnosis_class == "process_killed" and died.findings == ["died_after_ready"]
    assert died.key_line is not None and "died unexpectedly" in died.key_line
    assert any("died unexpectedly" in line for line in died.lines_around)
    assert any("EngineCore encountered a fatal error" in line for line in died.lines_around)
    killed = diagnose_text(real("healthy-start.log") + f"\n{LOG_PREFIX} process 4242 killed by SIGKILL (9)\n")
    assert (killed.diagnosis_class, killed.exit_code) == ("process_killed", -9)


def test_a_log_that_stops_after_ready_is_healthy_only_while_the_process_lives() -> None:
    log = real("healthy-start.log")
    assert diagnose_text(log).diagnosis_class == "healthy"
    exited = diagnose_text(log, DiagnosisHints(exit_code=0, process_alive=False))
    assert exited.diagnosis_class != "healthy" and exited.findings == ["died_after_ready"]
    assert exited.lines_around  # the last lines before the log ended


def test_the_oom_killers_lines_about_the_engine_decide_process_killed() -> None:
    log = real("api-server-sigkill-after-ready.log")
    pids = log_pids(log)
    worker = max(pids)
    kernel = "\n".join(
        [
            "[ 7625.950034] opvdf7a131: left allmulticast mode",
            f"[ 7712.101010] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task=VLLM::Worker,pid={worker},uid=0",
            f"[ 7712.101020] Out of memory: Killed process {worker} (VLLM::Worker) total-vm:9000000kB",
            "[ 7712.101030] Out of memory: Killed process 99999999 (someone-else) total-vm:1kB",
        ]
    )
    lines = oom_kill_lines(kernel, pids)
    assert len(lines) == 2 and all(str(worker) in line for line in lines)
    diagnosis = diagnose_text(log, DiagnosisHints(exit_code=0, process_alive=False, kernel_lines=lines))
    assert diagnosis.diagnosis_class == "process_killed"
    assert "OOM killer" in diagnosis.summary
    assert any(line.startswith("kernel: ") and str(worker) in line for line in diagnosis.evidence)


def test_pytorchs_launcher_stopping_its_workers_on_a_termination_signal_is_a_stop() -> None:
    text = (
        "W0301 10:00:00.100000 2211 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, "
        "shutting down workers\n"
        "W0301 10:00:00.101000 2211 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2215 closing "
        "signal SIGTERM\n"
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.12/site-packages/torch/distributed/run.py", line 918, in main\n'
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 2211 got signal: 15\n"
    )
    diagnosis = diagnose_text(text, model=LearnedModel())
    assert diagnosis.diagnosis_class == "stopped", diagnosis.why
    assert "was ready" not in diagnosis.summary  # nothing in the log says it was


def test_a_just_in_time_kernel_build_after_the_warm_up_request_is_start_up_still_going() -> None:
    warm_up = (
        "[2026-02-10 09:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0\n"
        "[2026-02-10 09:00:01 TP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 "
        "mins) if you have not run `sglang.compile_deep_gemm`.\n"
    )
    assert diagnose_text(warm_up, model=LearnedModel()).diagnosis_class == "loading"
    ready = warm_up + "[2026-02-10 09:14:40] The server is fired up and ready to roll!\n"
    assert diagnose_text(ready, model=LearnedModel()).diagnosis_class == "healthy"


def test_communicators_torn_down_after_their_collectives_are_not_a_start_up() -> None:
    text = (
        "node1:3301:3301 [0] NCCL INFO comm 0x55d1 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
        "node1:3301:3301 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f10 recvbuff 0x7f10 count 4096 datatype 7 "
        "op 0 root 0 comm 0x55d1 [nranks=2] stream 0x55e0\n"
        "node1:3301:3390 [0] NCCL INFO [Service thread] Connection closed by localRank 1\n"
        "node1:3301:3301 [0] NCCL INFO comm 0x55d1 rank 0 nranks 2 cudaDev 0 busId 1b000 - Abort COMPLETE\n"
    )
    diagnosis = diagnose_text(text, model=LearnedModel())
    assert diagnosis.phase == "serving" and diagnosis.diagnosis_class != "loading", diagnosis.why


def test_the_engine_core_ending_on_a_signal_while_the_server_takes_requests_was_killed_from_outside() -> None:
    serving = 'INFO:     127.0.0.1:40112 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    exiting = "DEBUG 12-18 18:27:34 [core.py:392] EngineCore exiting.\n"
    added = "INFO 12-18 18:27:36 [async_llm.py:252] Added request chatcmpl-bea7d70dd962403abeb7b3f2234333a8.\n"
    diagnosis = diagnose_text(serving + exiting + added, model=LearnedModel())
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why
    assert diagnosis.key_line is not None and "EngineCore exiting" in diagnosis.key_line
    # The server shutting down around it is the whole engine stopped.
    shutdown = "INFO 12-18 18:27:36 [launcher.py:80] Shutting down FastAPI HTTP server.\n"
    assert diagnose_text(serving + exiting + shutdown, model=LearnedModel()).diagnosis_class == "stopped"


def test_a_worker_that_died_explains_the_broadcast_stall_around_it() -> None:
    stall = (
        "DEBUG 07-04 17:35:10 [shm_broadcast.py:456] No available shared memory broadcast block found in 60 second.\n"
    )
    died = (
        "ERROR 07-04 17:35:16 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting down "
        "executor.\n"
    )
    assert diagnose_text(stall * 2, model=LearnedModel()).diagnosis_class == "nccl_hang"
    diagnosis = diagnose_text(stall + died + stall * 3, model=LearnedModel())
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why


def test_the_engines_broadcast_read_that_timed_out_is_its_no_progress_watchdog() -> None:
    core = "(EngineCore pid=222) ERROR 08-15 11:20:19 [core.py:1361] "
    text = (
        f"{core}Traceback (most recent call last):\n"
        f'{core}  File "/opt/vllm/vllm/distributed/device_communicators/shm_broadcast.py", line 610, in acquire_read\n'
        f"{core}    self._spin_condition.wait(timeout_ms=read_timeout.timeout_ms())\n"
        f'{core}  File "/opt/vllm/vllm/distributed/device_communicators/shm_broadcast.py", line 647, in timeout_ms\n'
        f"{core}    raise TimeoutError\n"
        f"{core}TimeoutError\n"
    )
    diagnosis = diagnose_text(text, model=LearnedModel())
    assert diagnosis.diagnosis_class == "nccl_hang", diagnosis.why


def test_batches_sglang_decodes_while_it_drains_on_a_signal_are_the_stop() -> None:
    text = (
        "[2025-04-26 10:13:01] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
        "[2025-04-26 10:13:04] Gracefully exiting... remaining number of requests 3\n"
        "[2025-04-26 10:13:09] Gracefully exiting... remaining number of requests 2\n"
        "[2025-04-26 10:13:18 TP0] Decode batch. #running-req: 1, #token: 11, token usage: 0.00, gen throughput "
        "(token/s): 0.85, #queue-req: 0, \n"
    )
    diagnosis = diagnose_text(text, model=LearnedModel())
    assert (diagnosis.diagnosis_class, diagnosis.line_number) == ("stopped", 1), diagnosis.why
    undrained = text.replace("Gracefully exiting... remaining number of requests", "Scheduler queue length")
    assert diagnose_text(undrained, model=LearnedModel()).diagnosis_class != "stopped"


def test_the_stores_socket_that_waited_out_its_timeout_is_a_rank_that_never_came() -> None:
    warning = (
        "[rank{rank}]:[W806 22:23:09.971726955 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=109, "
        "addr=[::ffff:10.0.0.2]:38930, remote=[::ffff:10.0.0.2]:47904) timed out after 1800000ms\n"
    )
    diagnosis = diagnose_text("".join(warning.format(rank=rank) for rank in range(4)), model=LearnedModel())
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("nccl_hang", "store-wait-timeout"), diagnosis.why


def test_silence_after_statistics_with_requests_running_is_an_engine_that_stopped() -> None:
    stats = (
        "INFO 08-06 09:37:{second} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 415.0 tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 41.5%\n"
    )
    busy = "".join(stats.format(second=second, running=50) for second in (26, 36, 46))
    silent = DiagnosisHints(seconds_since_output=900)
    stuck = diagnose_text(busy, silent, model=LearnedModel())
    assert (stuck.diagnosis_class, stuck.line_number) == ("nccl_hang", 3), stuck.why
    assert diagnose_text(busy, model=LearnedModel()).diagnosis_class == "healthy"  # still logging: working
    idle = busy + stats.format(second=56, running=0)
    assert diagnose_text(idle, silent, model=LearnedModel()).diagnosis_class == "healthy"  # nothing left to run
    sglang = (
        "[2025-07-01 10:00:05 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, "
        "gen throughput (token/s): 120.5, #queue-req: 0, \n"
    )
    assert diagnose_text(sglang, silent, model=LearnedModel()).diagnosis_class == "nccl_hang"


def test_an_engine_that_died_before_the_servers_orderly_shutdown_is_no_stop() -> None:
    served = (
        "INFO 12-06 14:08:27 launcher.py:19] Available routes are:\n"
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
        "INFO 12-06 14:09:27 engine.py:267] Added request cmpl-24f0-0.\n"
    )
    died = (
        "ERROR 12-06 14:09:37 client.py:282] RuntimeError('Engine process (pid 16470) died.')\n"
        "ERROR 12-06 14:09:37 client.py:282] NoneType: None\n"
        "CRITICAL 12-06 14:09:39 launcher.py:99] MQLLMEngine is already dead, terminating server process\n"
    )
    stop = "INFO:     Shutting down\nINFO:     Waiting for application shutdown.\n"
    died += stop
    rules = LearnedModel()
    assert diagnose_text(served + died, model=rules).diagnosis_class == "process_killed"
    # Triton's compiler aborting on a conversion this GPU generation lacks is what killed it.
    aborted = "Unsupported conversion from f16 to f16\nLLVM ERROR: Unsupported rounding mode for conversion.\n"
    diagnosis = diagnose_text(served + aborted + died, model=rules)
    assert diagnosis.diagnosis_class == "unsupported_arch"
    assert [remedy.id for remedy in diagnosis.remedies] == ["use_float32"]
    # The same shutdown with no death before it is the operator's stop.
    assert diagnose_text(served + stop, model=rules).diagnosis_class == "stopped"


def test_the_kernel_invoking_its_oom_killer_for_a_worker_is_a_kill_whatever_the_driver_said() -> None:
    text = (
        "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n"
        "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359\n"
        "VLLM::Worker_TP invoked oom-killer: gfp_mask=0x102cc2(GFP_HIGHUSER)\n"
        "oom_kill_process+0x1f8/0x3f0\n"
    )
    assert diagnose_text(text, model=LearnedModel()).diagnosis_class == "process_killed"
    driver_alone = "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n"
    assert diagnose_text(driver_alone, model=LearnedModel()).diagnosis_class == "cuda_oom"
