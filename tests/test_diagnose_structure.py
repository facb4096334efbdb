"""Diagnosis from the structure of a log: root cause, failing component, phase, lifecycle, engine hints.

Logs come from the tune part of the diagnosis corpus (real excerpts from public issue threads) or
are built from them; each test names the behaviour the issue asked for.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_agent

from tools.logs.calibration import Band, Calibration
from tools.logs.components import frame_component
from tools.logs.decide import decide
from tools.logs.diagnose import DiagnosisHints, diagnose_text
from tools.logs.events import parse_events
from tools.logs.evidence import Evidence
from tools.logs.frames import Frame
from tools.logs.learned import LearnedModel
from tools.logs.prefixes import split_line

CORPUS = Path(__file__).resolve().parent / "data" / "diagnosis_corpus" / "logs"
OLD_LOGS = Path(__file__).resolve().parent / "data" / "logs"


def corpus(name: str) -> str:
    return (CORPUS / f"{name}.log").read_text()


def test_prefixes_are_peeled_and_the_writer_kept() -> None:
    line = "(EngineCore_DP0 pid=6880) ERROR 10-25 13:08:43 [core.py:708] ValueError: To serve at least one request"
    parts = split_line(line)
    assert parts.text == "ValueError: To serve at least one request"
    assert parts.origin == "EngineCore_DP0 pid=6880" and parts.level == "ERROR"
    assert split_line("sglang-1  | [2025-10-29 11:25:58 TP3] Watchdog timeout (x)").origin == "TP3"
    assert split_line("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog").origin == "rank0"


def test_chained_tracebacks_keep_the_first_error_as_root_cause() -> None:
    text = corpus("vllm-9624-arch-inspection-failed")  # "The above exception was the direct cause ..."
    events = parse_events(text.splitlines())
    assert [event.kind for event in events.events] == ["exception", "truncated"]
    assert events.events[1].chained
    diagnosis = diagnose_text(text)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.type == "subprocess.CalledProcessError"
    assert diagnosis.diagnosis_class == "model_load_error"


def test_an_echo_is_never_the_key_line() -> None:
    root = corpus("vllm-29233-cpu-kvcache-space")
    echo = (
        "(APIServer pid=1179246) RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}\n"
    )
    diagnosis = diagnose_text(root + echo)
    assert diagnosis.diagnosis_class == "cuda_oom" and diagnosis.line_number == 1
    assert diagnosis.root_cause is not None and diagnosis.root_cause.message.startswith("To serve at least one")


def test_a_validation_error_reports_its_reason_not_its_header() -> None:
    diagnosis = diagnose_text(corpus("vllm-22043-validation-error-repo-id"))
    assert diagnosis.diagnosis_class == "model_load_error"
    assert diagnosis.key_line is not None and "Value error, Invalid repository ID" in diagnosis.key_line
    assert diagnosis.root_cause is not None and diagnosis.root_cause.type == "ValidationError"
    assert diagnosis.root_cause.message.startswith("Invalid repository ID or local directory specified")


def test_a_source_line_is_not_mistaken_for_the_error() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory\n'
        '    raise ValueError("No available memory for the cache blocks. "\n'
        "ValueError: something else went wrong in the scheduler\n"
    )
    diagnosis = diagnose_text(text)
    assert diagnosis.key_line == "ValueError: something else went wrong in the scheduler"
    assert diagnosis.signature != "vllm-no-cache-blocks"


def test_per_rank_crash_names_the_failing_component() -> None:
    diagnosis = diagnose_text(corpus("vllm-6783-segfault-pynccl-allreduce"))
    root = diagnosis.root_cause
    assert root is not None and root.kind == "crash" and root.origin == "RayWorkerWrapper pid=24036"
    assert root.component == "distributed" and root.frames[0].function == "ncclAllReduce"
    assert diagnosis.diagnosis_class == "nccl_error"


def test_cuda_graph_capture_is_named_by_its_own_functions_not_by_any_capture() -> None:
    capturing = [
        Frame("/env/sglang/srt/model_executor/cuda_graph_runner.py", 300, "capture_one_batch_size"),
        Frame("/env/vllm/v1/worker/gpu_model_runner.py", 2000, "capture_model"),
        Frame("/env/vllm/v1/worker/gpu_model_runner.py", 2100, "_capture_cudagraphs"),
        Frame("/env/torch/cuda/graphs.py", 80, "capture_end"),
    ]
    assert [frame_component(frame) for frame in capturing] == ["cuda_graph"] * 4
    assert frame_component(Frame("/env/uvicorn/server.py", 328, "capture_signals")) == "http_server"
    assert frame_component(Frame("/env/app/logs.py", 10, "capture_output")) is None


def test_a_shape_error_in_speculative_code_is_a_spec_decode_problem() -> None:
    diagnosis = diagnose_text(corpus("sglang-13352-eagle3-topk-cat"))
    assert diagnosis.diagnosis_class == "spec_decode_problem"
    assert diagnosis.root_cause is not None and diagnosis.root_cause.component == "speculative"
    assert "Sizes of tensors must match" in (diagnosis.key_line or "")


def test_a_cut_traceback_in_the_drafter_loader_is_still_understood() -> None:
    diagnosis = diagnose_text(corpus("vllm-54526-speculators-eagle3-load"))  # no exception line at all
    assert diagnosis.diagnosis_class == "spec_decode_problem"
    assert diagnosis.root_cause is not None and diagnosis.root_cause.kind == "truncated"
    assert "ends_in_traceback" not in diagnosis.findings or diagnosis.diagnosis_class != "loading"


def test_the_phase_points_at_the_drafter() -> None:
    diagnosis = diagnose_text(corpus("vllm-26328-gpt-oss-eagle3-drafter"))
    assert diagnosis.phase == "drafter" and diagnosis.diagnosis_class == "spec_decode_problem"


def test_an_exited_process_is_never_healthy_and_death_after_ready_is_a_finding() -> None:
    healthy = (OLD_LOGS / "sglang-healthy.log").read_text()
    assert diagnose_text(healthy).diagnosis_class == "healthy"
    died = diagnose_text(healthy, DiagnosisHints(exit_code=1, process_alive=False))
    assert died.diagnosis_class == "unknown" and died.findings == ["died_after_ready"]
    killed = diagnose_text(healthy, DiagnosisHints(exit_code=-9, process_alive=False))
    assert killed.diagnosis_class == "process_killed" and "died_after_ready" in killed.findings


def test_a_log_that_ends_in_a_traceback_is_never_loading() -> None:
    loading = corpus("sglang-11716-tp8-load-begin")
    assert diagnose_text(loading).diagnosis_class == "loading"
    cut = loading + "\n" + corpus("vllm-15445-load-weights-traceback")
    diagnosis = diagnose_text(cut)
    assert diagnosis.diagnosis_class == "model_load_error" and "ends_in_traceback" in diagnosis.findings
    exited = diagnose_text(loading, DiagnosisHints(process_alive=False))
    assert exited.diagnosis_class == "unknown" and exited.findings == ["exited_during_start_up"]


def test_harmless_warnings_in_a_loading_log_are_not_failures() -> None:
    for name in ("sglang-12496-custom-allreduce-warning", "sglang-4127-tp4-loading-ignorable-error"):
        diagnosis = diagnose_text(corpus(name))
        assert diagnosis.diagnosis_class == "loading", name
        assert diagnosis.engine_hints == []


def test_serving_lines_without_a_ready_line_are_healthy() -> None:
    diagnosis = diagnose_text(corpus("sglang-1270-decode-steady"))
    assert diagnosis.diagnosis_class == "healthy" and diagnosis.phase == "serving"


def test_engine_advice_becomes_machine_usable_hints() -> None:
    capture = diagnose_text(corpus("sglang-11218-dsv32-torch-compile-capture"))
    actions = {hint.setting: hint.action for hint in capture.engine_hints}
    assert actions["--mem-fraction-static"] == {"adjust_flag": {"mem_fraction": -0.05}}
    assert actions["--cuda-graph-max-bs"] == {"scale_flag": {"cuda_graph_max_bs": 0.5}}
    assert actions["--disable-cuda-graph"] == {"set_flag": {"disable_cuda_graph": True}}
    assert all(hint.evidence and hint.line_number for hint in capture.engine_hints)
    kv_cache = diagnose_text(corpus("vllm-29233-cpu-kvcache-space"))
    limit = next(hint for hint in kv_cache.engine_hints if hint.setting == "max_model_len")
    assert limit.action == {"set_flag": {"context_length": 37376}} and "37376" in limit.evidence
    bf16 = diagnose_text(corpus("vllm-1153-t4-bfloat16"))
    assert bf16.remedies[0].action == {"add_flags": ["--dtype", "half"]}


def test_low_calibrated_confidence_becomes_unknown_with_the_two_likeliest_classes() -> None:
    evidence = [
        Evidence("component", "spec_decode_problem", 65, 0.75, 3, "the root cause's frames are in speculative"),
        Evidence("phase", "model_load_error", 30, 0.45, 3, "the failure came while loading weights"),
    ]
    sure = decide(evidence, Calibration(), [1, 2, 3, 4])
    assert sure is not None and sure.diagnosis_class == "spec_decode_problem"
    unreliable = Calibration(bands=[Band(low=0.0, high=1.0, count=10, correct=2)])
    doubtful = decide(evidence, unreliable, [1, 2, 3, 4])
    assert doubtful is not None and doubtful.diagnosis_class == "unknown" and doubtful.index == 3
    assert [alternative.diagnosis_class for alternative in doubtful.alternatives] == [
        "spec_decode_problem",
        "model_load_error",
    ]
    assert all(alternative.why for alternative in doubtful.alternatives)


def test_diagnose_json_has_root_cause_phase_and_engine_hints() -> None:
    result = run_agent("diagnose", CORPUS / "sglang-11218-dsv32-torch-compile-capture.log", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert {"class", "confidence", "line_number", "key_line", "remedies", "engine"} <= payload.keys()
    root = payload["root_cause"]
    assert root["type"] == "Exception" and root["message"].startswith("Capture cuda graph failed")
    assert root["component"] == "cuda_graph" and root["frames"][0]["function"] == "__init__"
    assert payload["phase"] == "not_started" and payload["engine_hints"][0]["action"]
    human = run_agent("diagnose", CORPUS / "sglang-11218-dsv32-torch-compile-capture.log")
    assert "root cause: Exception: Capture cuda graph failed" in human.stdout and "engine says:" in human.stdout


def test_slurm_task_labels_are_peeled_so_a_labelled_crash_stack_names_its_component() -> None:
    parts = split_line('0:   File "/env/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"')
    assert parts.origin == "0" and parts.text.startswith("  File ")
    crash = (
        "0: g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000\n"
        "0: Fatal Python error: Segmentation fault\n"
        "0: \n"
        "0: Thread 0x000014844b65d740 (most recent call first):\n"
        '0:   File "/env/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3938 in barrier\n'
        '0:   File "/env/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 79 in wrapper\n'
        '0:   File "/home/user/test/basic.py", line 11 in main\n'
    )
    events = parse_events(crash.splitlines()).real()
    assert [event.kind for event in events] == ["crash"]
    assert events[0].frames[0].function == "barrier"
    assert diagnose_text(crash, model=LearnedModel()).diagnosis_class == "nccl_error"
