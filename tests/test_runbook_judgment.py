"""The runbook's judgment in pieces: remedy ladders, stop answers, hardware evidence, freeing GPUs before asking,
true reasons in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.policies.runbook.answers import apply_answer, is_stop
from agent.policies.runbook.asking import ask
from agent.policies.runbook.choices import best, compare_finding
from agent.policies.runbook.hardware import host_evidence
from agent.policies.runbook.ladders import (
    Candidate,
    candidates,
    helped,
    judge_last_step,
    next_step,
    remember,
    take_step,
)
from agent.policies.runbook.progress import Attempt, Measurement, RunbookProgress
from agent.policies.runbook.report import final_report
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState, Question
from tools.hosts.base import GpuInfo
from tools.kernel_log import ReadKernelLogOutput, parse_events
from tools.logs.diagnose import Diagnosis, diagnose_text
from tools.records import ModelInfo, ProcessRecord

CAPTURE_OOM = """[2026-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.
[2026-01-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 369, in __init__
    self.capture()
Exception: Capture cuda graph failed: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {size} GiB. \
GPU 0 has a total capacity of 79.65 GiB of which 9.50 MiB is free. If reserved but unallocated memory is large try \
setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
2. set --cuda-graph-max-bs to a smaller value (e.g., 16)
3. disable torch compile by not using --enable-torch-compile
4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)
"""


def _capture_oom(size: float) -> Diagnosis:
    return diagnose_text(CAPTURE_OOM.format(size=size))


def _state() -> ProjectState:
    state = ProjectState(goal="serve the model")
    state.environment.gpus = [GpuInfo(index=index, name="H100", memory_total_mib=81559) for index in range(8)]
    state.model = ModelInfo(name="m", path="/m", size_gib=220.0)
    return state


def test_the_engines_own_value_comes_first_debug_advice_never_and_switches_after_the_library() -> None:
    ids = [candidate.id for candidate in candidates(_capture_oom(14.13))]
    assert ids.index("lower_cuda_graph_bs") < ids.index("lower_mem_fraction") < ids.index("disable_cuda_graph")
    assert not any("CUDA_LAUNCH_BLOCKING" in candidate for candidate in ids)
    assert ids.index("disable_cuda_graph") < ids.index("engine:PYTORCH_CUDA_ALLOC_CONF:set")
    estimate = diagnose_text(
        "ValueError: To serve at least one request with the model's max seq len (131072), (7.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (2.00 GiB). Based on the available memory, the "
        "estimated maximum model length is 37376. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine."
    )
    first = candidates(estimate)[0]
    assert first.action == {"set_flag": {"context_length": 37376}}


def test_a_step_that_helped_is_repeated_and_one_that_did_not_is_reverted() -> None:
    state, progress = _state(), RunbookProgress(base_config={"engine": "sglang", "tp_size": 8, "env": {}})
    progress.engine_settings = {"cuda_graph_max_bs": 128}
    failure = {"outcome": "exited", "diagnosis": "cuda_graph_capture_failure", "phase": "cuda_graph"}
    progress.attempts.append(
        Attempt(number=1, purpose="baseline", process="engine-1", change="baseline", shortfall_gib=14.1, **failure)
    )
    remember(progress, "cuda_graph_capture_failure", candidates(_capture_oom(14.13)))
    step = next_step(state, progress, "cuda_graph_capture_failure", None)
    assert step is not None and step[1]["cuda_graph_max_bs"] == 64
    take_step(progress, "cuda_graph_capture_failure", *step)
    second = Attempt(number=2, purpose="baseline", process="engine-2", change="x", outcome="exited")
    second.diagnosis, second.phase, second.shortfall_gib = "cuda_graph_capture_failure", "cuda_graph", 2.41
    progress.attempts.append(second)
    last = judge_last_step(state, progress, second)
    assert last is not None and last.verdict == "helped"
    again = next_step(state, progress, "cuda_graph_capture_failure", last)
    assert again is not None and again[0].id == "lower_cuda_graph_bs" and again[1]["cuda_graph_max_bs"] == 32
    take_step(progress, "cuda_graph_capture_failure", *again)
    third = Attempt(number=3, purpose="baseline", process="engine-3", change="y", outcome="exited")
    third.diagnosis, third.phase, third.shortfall_gib = "cuda_graph_capture_failure", "cuda_graph", 2.41
    progress.attempts.append(third)
    reverted = judge_last_step(state, progress, third)
    assert reverted is not None and reverted.verdict == "reverted"
    assert progress.base_config["cuda_graph_max_bs"] == 64  # back to what helped
    assert progress.changes[-1].startswith("reverted cuda_graph_max_bs: 64 -> 32")


def test_helped_means_further_into_start_up_or_less_memory_missing() -> None:
    before = Attempt(number=1, purpose="baseline", process="e", change="c", outcome="exited")
    before.diagnosis, before.phase, before.shortfall_gib = "cuda_graph_capture_failure", "cuda_graph", 4.0
    later = before.model_copy(update={"number": 2, "diagnosis": "cuda_oom", "phase": "server"})
    earlier = before.model_copy(update={"number": 2, "diagnosis": "cuda_oom", "phase": "memory_profiling"})
    same = before.model_copy(update={"number": 2})
    assert helped(before, later) and not helped(before, earlier) and not helped(before, same)
    assert helped(before, before.model_copy(update={"shortfall_gib": 1.0}))
    assert helped(before, before.model_copy(update={"outcome": "ready"}))


def test_the_memory_fraction_stops_where_the_weights_leave_no_kv_cache() -> None:
    state, progress = _state(), RunbookProgress(base_config={"engine": "sglang", "tp_size": 8, "mem_fraction": 0.45})
    progress.ladders["cuda_oom"] = [
        Candidate(id="lower_mem_fraction", text="lower", action={"adjust_flag": {"mem_fraction": -0.05}}).model_dump()
    ]
    assert next_step(state, progress, "cuda_oom", None) is None  # 220 GiB / 8 on 79.6 GiB: 0.35 + headroom


@pytest.mark.parametrize(
    ("answer", "stop"),
    [
        ("stop", True),
        ("Stop here.", True),
        ("give up", True),
        ("leave it", True),
        ("please stop, keep the baseline", True),
        ("stop and retry with NCCL_P2P_DISABLE=1", False),
        ("don't stop, keep waiting", False),
        ("keep waiting", False),
        ("retry", False),
        ("attention_backend=triton", False),
    ],
)
def test_stop_answers_end_and_other_text_is_guidance(answer: str, stop: bool) -> None:
    assert is_stop(answer) is stop


def test_a_stop_answer_ends_failed_when_nothing_serves_and_done_when_asked_to_keep_it() -> None:
    question = Question(
        id="q1", question="Is the GPU fixed?", kind="hardware", answer="give up", hypothesis="a bad GPU"
    )
    state, progress = _state(), RunbookProgress(blocked_on="hardware", phase="launch")
    apply_answer(state, progress, question)
    assert progress.phase == "end" and progress.ending is not None and progress.ending.status == "failed"
    assert "give up" in progress.ending.reason and "Is the GPU fixed?" in progress.ending.reason
    keep = RunbookProgress(blocked_on="exhausted", phase="launch", base_url="http://127.0.0.1:30000")
    apply_answer(state, keep, question.model_copy(update={"answer": "stop, keep what works"}))
    assert keep.ending is not None and keep.ending.status == "done"
    waiting = RunbookProgress(blocked_on="slow_load", phase="launch")
    apply_answer(state, waiting, question.model_copy(update={"answer": "keep waiting"}))
    assert waiting.phase == "await" and waiting.ending is None


def test_a_lost_gpu_and_the_oom_killer_are_host_evidence(tmp_path: Path) -> None:
    state, progress = _state(), RunbookProgress(gpu_count=8)
    attempt = Attempt(number=1, purpose="baseline", process="e", change="c", outcome="exited", diagnosis="nccl_error")
    assert host_evidence(state, progress, attempt, ReadKernelLogOutput(readable=True)) is None
    state.environment.gpus = state.environment.gpus[:7]
    lost = host_evidence(state, progress, attempt, None)
    assert lost is not None and lost.kind == "hardware" and "7 of the 8 GPUs" in lost.lines[0]
    state.environment.gpus = _state().environment.gpus
    kernel = ReadKernelLogOutput(
        readable=True, events=parse_events(["Out of memory: Killed process 4242 (python3) total-vm:1kB"])
    )
    killed = attempt.model_copy(update={"diagnosis": "process_killed"})
    found = host_evidence(state, progress, killed, kernel)
    assert found is not None and found.kind == "host_memory"


def test_a_probe_without_gpus_is_no_hardware_fault_where_the_plan_had_none() -> None:
    state = _state()
    state.environment.gpus = []
    state.environment.gpu_probe_error = "no NVIDIA driver/GPU found: NVML Shared Library Not Found"
    attempt = Attempt(number=1, purpose="baseline", process="e", change="c", outcome="exited", diagnosis="unknown")
    assert host_evidence(state, RunbookProgress(gpu_count=0), attempt, None) is None  # a CPU engine's host
    lost = host_evidence(state, RunbookProgress(gpu_count=8), attempt, None)
    assert lost is not None and lost.kind == "hardware"  # the GPUs the plan used are gone


def test_a_hung_engine_is_stopped_before_the_question_unless_it_is_the_evidence() -> None:
    state = _state()
    state.processes.append(
        ProcessRecord(name="engine-1", kind="engine", pid=1, create_time=0.0, argv=[], log_path="/l", state="hung")
    )
    progress = RunbookProgress(phase="launch")
    progress.attempts.append(Attempt(number=1, purpose="baseline", process="engine-1", change="c", outcome="hung"))
    assert ask(state, progress, "exhausted", "Out of ideas.", [], "h") is None
    assert progress.phase == "stop" and progress.after_stop == "ask" and progress.pending_ask is not None
    assert "stopped engine-1" in progress.pending_ask["question"]
    kept = ask(state, RunbookProgress(attempts=progress.attempts), "unknown_failure", "?", [], "h", "a stack dump")
    assert kept is not None and "engine-1 (pid 1) is still running, because a stack dump" in kept.question


def test_the_report_gives_the_true_reason_a_drafter_was_dropped() -> None:
    state = _state()
    progress = RunbookProgress(speculative_wanted=True, chosen="baseline")
    progress.verdicts["offshelf"] = "dropped: its output was wrong (garbled answers under speculation)"
    progress.training_pointless = "the speculative path gives wrong output on this engine and GPU, whatever the drafter"
    report = final_report(state, progress, RunbookSettings())
    assert "Kept: the baseline; the offshelf drafter was dropped: its output was wrong" in report
    assert "No drafter was trained" in report and "no drafter beat it" not in report


def test_the_report_says_where_this_machine_reaches_an_engine_the_host_serves_elsewhere() -> None:
    state = _state()
    progress = RunbookProgress(base_url="http://127.0.0.1:30000", reached_at="http://127.0.0.1:41234")
    progress.attempts.append(Attempt(number=1, purpose="baseline", process="engine-1", change="c", outcome="ready"))
    report = final_report(state, progress, RunbookSettings())
    assert "engine-1 keeps serving at http://127.0.0.1:30000 (from this machine: http://127.0.0.1:41234)" in report
    progress.reached_at = None
    assert "from this machine" not in final_report(state, progress, RunbookSettings())


def test_the_report_gives_the_reason_the_kept_drafter_won_once() -> None:
    progress = RunbookProgress(speculative_wanted=True, chosen="trained")
    progress.verdicts["trained"] = "kept: single-stream 1.20x the baseline (at least the 1.05x needed)"
    report = final_report(_state(), progress, RunbookSettings())
    assert "Kept: the trained drafter (single-stream 1.20x the baseline (at least the 1.05x needed))." in report


def test_a_drafter_that_accepts_nothing_is_dropped_however_fast_it_measured() -> None:
    # A loaded host can measure a drafter that accepts nothing 10% faster than the baseline; that is noise.
    state = _state()
    progress = RunbookProgress(speculative_wanted=True, purpose="offshelf")
    progress.measurements["baseline single"] = Measurement(output_tok_s=100.0)
    progress.measurements["offshelf single"] = Measurement(output_tok_s=110.0, accept_length=1.0)
    settings = RunbookSettings()
    compare_finding(state, progress, "offshelf", settings)
    assert best(state, progress, settings) == "baseline"
    assert progress.verdicts["offshelf"].startswith("dropped: single-stream 1.10x the baseline (at least the 1.05x")
    assert "below the 1.10 a drafter needs: its measured gain is noise" in progress.verdicts["offshelf"]
    assert any(finding.summary.startswith("offshelf drafter loses") for finding in state.findings)
    # The same speed with drafted tokens accepted is a win.
    progress.measurements["offshelf single"] = Measurement(output_tok_s=110.0, accept_length=1.8)
    assert best(state, progress, settings) == "offshelf"


def test_stop_to_the_training_question_ends_the_training_not_the_run() -> None:
    state = _state()
    progress = RunbookProgress(phase="train", purpose="training_target", blocked_on="training_setup")
    apply_answer(state, progress, Question(id="q1", question="SpecForge is broken here", answer="stop here"))
    assert (progress.purpose, progress.phase, progress.ending) == ("trained", "advance", None)
    assert progress.training.notes == ["not done: the operator answered 'stop here'"]
    other = RunbookProgress(phase="launch", blocked_on="exhausted")
    apply_answer(state, other, Question(id="q2", question="Out of ideas", answer="stop here"))
    assert other.phase == "end" and other.ending is not None
