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

STARTED = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"


def rules_alone(text: str, hints: DiagnosisHints | None = None) -> Diagnosis:
    return diagnose_text(text, hints, model=LearnedModel())


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
