"""diagnose_log on realistic SGLang/vLLM logs of every class (wording from public issue threads)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import get_args

import pytest

from tools.logs.diagnose import DiagnosisHints, diagnose_file, diagnose_text
from tools.logs.library import DiagnosisClass, literal_led, load_library, parse_library

LOGS = Path(__file__).resolve().parent / "data" / "logs"

# file, expected class, text expected in the key line, expected engine
CASES = [
    ("sglang-healthy.log", "healthy", "fired up and ready to roll", "sglang"),
    ("vllm-healthy.log", "healthy", "Application startup complete", "vllm"),
    ("sglang-loading.log", "loading", "42% Completed", "sglang"),
    ("vllm-loading.log", "loading", "Capturing CUDA graphs", "vllm"),
    ("vllm-nccl-watchdog.log", "nccl_error", "Watchdog caught collective operation timeout", "vllm"),
    ("vllm-shm-stall.log", "nccl_hang", "No available shared memory broadcast block", "vllm"),
    ("sglang-nccl-error.log", "nccl_error", "RuntimeError: NCCL error: unhandled system error", "sglang"),
    ("vllm-nccl-error.log", "nccl_error", "peer access is not supported", "vllm"),
    ("sglang-kv-oom.log", "cuda_oom", "Not enough memory. Please try to increase", "sglang"),
    ("vllm-cuda-oom.log", "cuda_oom", "torch.OutOfMemoryError: CUDA out of memory", "vllm"),
    ("sglang-sm120-no-kernel.log", "unsupported_arch", "no kernel image is available", "sglang"),
    ("sglang-sm120-fmha.log", "unsupported_arch", "Unsupported architecture", "sglang"),
    ("sglang-capture-failed.log", "cuda_graph_capture_failure", "Capture cuda graph failed", "sglang"),
    ("sglang-port-in-use.log", "port_in_use", "address already in use", "sglang"),
    ("vllm-port-in-use.log", "port_in_use", "[Errno 98] Address already in use", "vllm"),
    ("vllm-model-missing.log", "model_load_error", "does not appear to have a file named", "vllm"),
    ("sglang-unsupported-model.log", "model_load_error", "are not supported for now", "sglang"),
    ("sglang-eagle3-capture-missing.log", "spec_decode_problem", "set_eagle3_layers_to_capture", "sglang"),
    ("sglang-low-acceptance.log", "spec_decode_problem", "accept len: 1.00", "sglang"),
    ("sglang-sigkill.log", "process_killed", "killed by SIGKILL", "sglang"),
    ("vllm-xid79.log", "gpu_hardware_fault", "GPU has fallen off the bus", "vllm"),
    ("sglang-unknown.log", "unknown", "ImportError: libcudart.so.13", "sglang"),
    ("sglang-rejected-flag.log", "config_error", "error: unrecognized arguments: --reasoning_parser", "unknown"),
    ("vllm-attention-backend.log", "attention_backend_error", "is not valid for this configuration", "vllm"),
    # A real vLLM (CPU build) stopped with SIGTERM after it was ready (tests/data/real_vllm).
    ("../real_vllm/graceful-stop-sigterm.log", "stopped", "shutdown", "vllm"),
]


@pytest.mark.parametrize(("name", "expected", "key_text", "engine"), CASES)
def test_realistic_logs_are_classified(name: str, expected: str, key_text: str, engine: str) -> None:
    path = LOGS / name
    # as if just written: the files' age on disk is not the engine's silence (a stall is tested apart)
    diagnosis = diagnose_file(path, DiagnosisHints(seconds_since_output=0.0))
    assert diagnosis.diagnosis_class == expected
    assert diagnosis.key_line is not None and key_text in diagnosis.key_line
    assert diagnosis.engine == engine
    lines = path.read_text().splitlines()
    assert diagnosis.line_number is not None
    assert lines[diagnosis.line_number - 1].endswith(diagnosis.key_line)  # verbatim, right number
    if expected not in ("healthy", "stopped"):
        assert diagnosis.remedies, "every problem class comes with remedies"
    assert 0 < diagnosis.confidence < 1


def test_every_class_is_covered_by_a_realistic_log() -> None:
    covered = {expected for _, expected, _, _ in CASES} | {"nccl_hang", "warmup_failed"}
    assert covered == set(get_args(DiagnosisClass))


def test_json_shape_and_machine_usable_remedies() -> None:
    payload = json.loads(diagnose_file(LOGS / "sglang-sm120-no-kernel.log").model_dump_json())
    assert {"class", "confidence", "line_number", "key_line", "remedies", "engine"} <= payload.keys()
    first = payload["remedies"][0]
    assert first["action"] == {"set_flag": {"attention_backend": "triton"}} and first["text"]


def test_harmless_warnings_do_not_make_a_healthy_log_fail() -> None:
    text = (LOGS / "sglang-healthy.log").read_text()
    assert "Custom allreduce is disabled" in text and "NET/Plugin" in text
    assert diagnose_text(text).diagnosis_class == "healthy"
    # The warning alone, in a log that is still loading, is not a failure either.
    warning_only = "\n".join(line for line in text.splitlines()[:8])
    assert diagnose_text(warning_only).diagnosis_class == "loading"


def test_failure_after_ready_beats_the_ready_line() -> None:
    text = (LOGS / "sglang-healthy.log").read_text() + (
        "[2026-03-02 11:00:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    assert diagnose_text(text).diagnosis_class == "cuda_oom"


def test_root_cause_wins_over_its_consequences() -> None:
    diagnosis = diagnose_file(LOGS / "sglang-capture-failed.log")
    assert diagnosis.diagnosis_class == "cuda_graph_capture_failure"  # not cuda_oom, not the sigquit echo
    assert next(remedy.id for remedy in diagnosis.remedies) == "lower_cuda_graph_bs"


def test_silent_log_after_nccl_init_is_a_hang_only_when_stale(tmp_path: Path) -> None:
    log = tmp_path / "stalled.log"
    log.write_text((LOGS / "sglang-nccl-stalled.log").read_text())
    assert diagnose_file(log).diagnosis_class == "loading"  # just written: still starting
    an_hour_ago = time.time() - 3600
    os.utime(log, (an_hour_ago, an_hour_ago))
    diagnosis = diagnose_file(log, DiagnosisHints(interconnect="pcie"))
    assert diagnosis.diagnosis_class == "nccl_hang"
    assert diagnosis.remedies[0].action == {"set_env": {"NCCL_P2P_DISABLE": "1"}}


def test_interconnect_orders_nccl_remedies() -> None:
    text = (LOGS / "vllm-nccl-watchdog.log").read_text()
    on_pcie = diagnose_text(text, DiagnosisHints(interconnect="pcie"))
    on_nvlink = diagnose_text(text, DiagnosisHints(interconnect="nvlink"))
    assert on_pcie.remedies[0].id == "nccl_p2p_disable"
    assert on_nvlink.remedies[0].id != "nccl_p2p_disable"
    assert "nccl_p2p_disable" in [remedy.id for remedy in on_nvlink.remedies]


def test_exit_hints_settle_logs_without_a_signature() -> None:
    text = (LOGS / "sglang-loading.log").read_text()
    assert diagnose_text(text, DiagnosisHints(exit_code=-9)).diagnosis_class == "process_killed"
    assert diagnose_text(text, DiagnosisHints(exit_code=1)).diagnosis_class == "unknown"
    assert diagnose_text(text, DiagnosisHints(process_alive=True)).diagnosis_class == "loading"


def test_empty_log_is_unknown() -> None:
    diagnosis = diagnose_text("")
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.key_line is None


def test_big_log_is_diagnosed_from_a_bounded_window(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    steady = (
        b"[2026-03-02 10:19:02 TP0] Decode batch, #running-req: 31, #token: 31200, token usage: 0.10, "
        b"cuda graph: True, gen throughput (token/s): 1221.40, #queue-req: 0,\n"
    )
    with open(log, "wb") as handle:
        handle.write((LOGS / "sglang-healthy.log").read_bytes())
        handle.write(steady * 60_000)  # about 9 MB of steady state
        handle.write((LOGS / "sglang-kv-oom.log").read_bytes())
    size = log.stat().st_size
    diagnosis = diagnose_file(log, tail_bytes=256 * 1024, head_bytes=64 * 1024)
    assert diagnosis.diagnosis_class == "cuda_oom"
    lines = log.read_text().splitlines()
    assert diagnosis.line_number is not None and lines[diagnosis.line_number - 1] == diagnosis.key_line
    assert diagnosis.lines_from_end == 3
    assert diagnosis.log_size_bytes == size


def test_the_library_is_data_that_can_be_extended() -> None:
    text = (Path(__file__).resolve().parents[1] / "tools" / "logs" / "signatures.toml").read_text()
    extended = parse_library(
        text
        + """
[[signatures]]
id = "custom-disk-full"
class = "model_load_error"
engines = ["any"]
patterns = ['No space left on device']
priority = 95
confidence = 0.9
remedies = ["check_model_path"]
summary = "The disk is full."
"""
    )
    log_text = "Load weight begin\nOSError: [Errno 28] No space left on device\n"
    diagnosis = diagnose_text(log_text, library=extended)
    assert diagnosis.diagnosis_class == "model_load_error" and diagnosis.signature == "custom-disk-full"
    with pytest.raises(ValueError, match="unknown remedies"):
        parse_library(text.replace('remedies = ["escalate_hardware"]', 'remedies = ["no_such_remedy"]', 1))


def test_library_patterns_start_with_literal_text() -> None:
    # Patterns that start with a literal let the regex engine skip ahead; that keeps big logs fast.
    for signature in load_library().signatures:
        for pattern in signature.patterns:
            assert not pattern.startswith(("(?i)", "\\b", "\\w", "^", ".")), (signature.id, pattern)


def test_a_leading_case_pair_is_searched_as_two_literal_led_patterns() -> None:
    assert literal_led(r"[Nn]ot enough (?:GPU|NPU) memory") == [
        r"Not enough (?:GPU|NPU) memory",
        r"not enough (?:GPU|NPU) memory",
    ]
    # Left whole: a quantified class, a pair of two different letters, a pattern without a leading class.
    for pattern in (r"[Nn]+ot", r"[Ab]c", r"exit code: -\d", r"[0-9]+ bytes"):
        assert literal_led(pattern) == [pattern]
    pattern = r"[Ss]peculative decoding[^\n]*(?:failed|mismatch)|draft vocab"
    lines = [
        "Speculative decoding failed",
        "speculative decoding mismatch",
        "SPECULATIVE decoding failed",
        "draft vocab",
    ]
    whole = [bool(re.search(pattern, line)) for line in lines]
    assert whole == [any(re.search(variant, line) for variant in literal_led(pattern)) for line in lines]
    assert whole == [True, True, False, True]
