"""The runbook's pure parts: reading the goal, choosing models, applying remedies and answers."""

from __future__ import annotations

from pathlib import Path

from agent.actions import Ask
from agent.policies.runbook import drafter
from agent.policies.runbook.answers import apply_answer, settings_in
from agent.policies.runbook.goal import parse_goal, pick_drafter, pick_target
from agent.policies.runbook.launches import on_launch, record_attempt
from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.remedies import applicable, apply_remedy
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState, Question
from tools.engines.readiness import ReadinessReport
from tools.logs.diagnose import diagnose_file
from tools.records import ModelInfo, ProcessRecord

LOGS = Path(__file__).resolve().parent / "data" / "logs"


def test_goal_names_engine_speculation_and_model() -> None:
    goal = parse_goal("serve kimi with eagle3 on vLLM")
    assert goal.engine == "vllm"
    assert goal.speculative is True
    assert "kimi" in goal.model_words
    plain = parse_goal("bring up llama-3.1-8b")
    assert plain.engine is None and plain.speculative is False
    assert "llama-3.1-8b" in plain.model_words


def test_target_and_drafter_are_picked_by_name() -> None:
    models = [
        ModelInfo(name="Llama-3.1-8B", path="/m/llama", role="target"),
        ModelInfo(name="Kimi-K2.5-INT4", path="/m/kimi", role="target"),
        ModelInfo(name="Kimi-K2-Instruct-eagle3", path="/m/kimi-eagle", role="drafter"),
    ]
    target = pick_target(parse_goal("serve kimi with eagle3"), models)
    assert target is not None and target.path == "/m/kimi"
    drafter = pick_drafter(target, models)
    assert drafter is not None and drafter.path == "/m/kimi-eagle"
    assert pick_target(parse_goal("serve something"), models) is None  # two targets, none named


def test_remedies_change_one_thing_and_leave_the_input_untouched() -> None:
    config = {"engine": "sglang", "model_path": "/m", "env": {}}
    changed, notes = apply_remedy(config, {"set_env": {"NCCL_P2P_DISABLE": "1"}})
    assert changed["env"] == {"NCCL_P2P_DISABLE": "1"} and config["env"] == {}
    assert notes == ["NCCL_P2P_DISABLE=1"]
    lowered, notes = apply_remedy(changed, {"adjust_flag": {"mem_fraction": -0.05}})
    assert lowered["mem_fraction"] == 0.8 and notes == ["mem_fraction: 0.85 -> 0.8 (from an assumed default)"]
    halved, notes = apply_remedy(lowered, {"scale_flag": {"cuda_graph_max_bs": 0.5}}, {"cuda_graph_max_bs": 256})
    assert halved["cuda_graph_max_bs"] == 128  # from the value the engine reported, not an assumed one
    assert notes == ["cuda_graph_max_bs: 256 -> 128 (from the engine's own default)"]
    moved, notes = apply_remedy(halved, {"pick_free_port": True})
    assert isinstance(moved["port"], int) and notes[0].startswith("port=")
    same, notes = apply_remedy(moved, {"set_env": {"NCCL_P2P_DISABLE": "1"}})
    assert notes == [] and same == moved
    assert not applicable({"needs_human": True}) and not applicable({}) and applicable({"set_flag": {"x": 1}})


def test_answers_carry_settings_and_release_the_question() -> None:
    assert settings_in("try attention_backend=triton and NCCL_P2P_DISABLE=1 mem_fraction=0.7") == {
        "set_flag": {"attention_backend": "triton", "mem_fraction": 0.7},
        "set_env": {"NCCL_P2P_DISABLE": "1"},
    }
    state = ProjectState(goal="serve kimi")
    progress = RunbookProgress(
        base_config={"engine": "sglang", "env": {}}, blocked_on="unknown_failure", phase="launch"
    )
    apply_answer(state, progress, Question(id="q1", question="?", answer="retry with attention_backend=triton"))
    assert progress.base_config["attention_backend"] == "triton"
    assert progress.blocked_on is None and "unknown_failure" in progress.acknowledged
    assert "operator answered" in state.findings[-1].summary


def _failed(state: ProjectState, progress: RunbookProgress, log: Path) -> Ask | None:
    readiness = ReadinessReport(outcome="exited", exit_code=1, diagnosis=diagnose_file(log))
    return on_launch(state, progress, readiness, "http://127.0.0.1:30000", str(log), RunbookSettings())


def test_an_attention_backend_error_switches_the_backend_and_a_config_error_asks() -> None:
    state = ProjectState(goal="serve gemma")
    progress = RunbookProgress(base_config={"engine": "vllm", "env": {}, "kv_cache_dtype": "fp8"}, phase="launch")
    record_attempt(progress, "baseline launch")
    asked = _failed(state, progress, LOGS / "vllm-attention-backend.log")
    assert asked is None and progress.base_config["attention_backend"] == "triton"
    record_attempt(progress, "attention_backend=triton")
    asked = _failed(state, progress, LOGS / "vllm-attention-backend.log")
    assert asked is None and progress.base_config["kv_cache_dtype"] is None  # the next remedy, one change
    assert progress.base_config.get("attention_backend") is None  # the one that did not help is reverted
    record_attempt(progress, "kv_cache_dtype removed")
    asked = _failed(state, progress, LOGS / "sglang-rejected-flag.log")
    assert asked is not None and asked.question_kind == "config_error"
    assert any("unrecognized arguments" in line for line in asked.evidence)


def test_a_repeated_drafter_call_follows_the_job_that_already_runs() -> None:
    """After a restart the runbook repeats an interrupted train_drafter call; the tool refuses because the job
    runs, and the runbook follows that job instead of giving the training up."""
    state, progress = ProjectState(goal="serve kimi with eagle3"), RunbookProgress(phase="train")
    progress.training.step, progress.training.base_name = "data", "drafter-4"
    drafter.on_refused(state, progress, "drafter run 'drafter-4-data' is still running (pid 12); check it")
    assert (progress.phase, progress.training_job) == ("train_sleep", "drafter-4-data")
    drafter.on_refused(state, progress, "SpecForge training cannot start (offline); missing: gpu_memory: GPU 0 ...")
    assert (progress.purpose, progress.phase) == ("trained", "advance")
    assert progress.training.notes == [
        "SpecForge refused to start: SpecForge training cannot start (offline); missing: gpu_memory: GPU 0 ..."
    ]
    assert any(task.id == "train-drafter" and task.status == "skipped" for task in state.tasks)


def test_training_setup_answers_keep_the_baseline_or_probe_again() -> None:
    state = ProjectState(goal="serve kimi with eagle3")
    keep = RunbookProgress(phase="train", blocked_on="training_setup")
    apply_answer(state, keep, Question(id="q1", question="?", answer="keep the baseline"))
    assert (keep.purpose, keep.phase) == ("trained", "advance") and "keep the baseline" in keep.training.notes[0]
    retry = RunbookProgress(phase="train", blocked_on="training_setup")
    retry.training.step = "data"
    apply_answer(state, retry, Question(id="q2", question="?", answer="retry"))
    assert (retry.phase, retry.training.step, retry.training.reprobe) == ("train", "check", True)


def test_no_training_while_the_baseline_serves_finishes_without_a_relaunch() -> None:
    state = ProjectState(goal="serve llama with eagle3")
    progress = RunbookProgress(phase="train", purpose="training_target")
    record_attempt(progress, "baseline launch").outcome = "ready"
    state.processes.append(
        ProcessRecord(name="engine-1", pid=1, create_time=0.0, log_path="x", argv=["x"], kind="engine", state="ready")
    )
    drafter.on_refused(state, progress, "SpecForge training cannot start (offline); missing: ...")
    assert (progress.chosen, progress.phase) == ("baseline", "finish")
    state.processes[0].state = "stopped"  # e.g. stopped for the preparation: the baseline must come back
    progress = RunbookProgress(phase="train", purpose="training_target")
    record_attempt(progress, "baseline launch").outcome = "ready"
    drafter.on_refused(state, progress, "SpecForge training cannot start (offline); missing: ...")
    assert (progress.purpose, progress.phase, progress.chosen) == ("trained", "advance", None)
