"""Loop overhead: the agent's own time per step (not the policy's, not the tools'), and save latency.

For each checkpoint K, a state document is grown to what a scripted run has after K steps (the
workload of :mod:`benchmarks.loop_workload`: a finding every step, a benchmark record every tenth),
and then the real loop runs the next ``--window`` steps on the local host with its real store
(atomic, fsynced saves) and journal. Each step is timed as a whole, in wall and CPU time; the time
inside the policy's ``decide`` and inside ``ToolRegistry.execute`` is subtracted, leaving the loop's
own cost, itemized as state saves, journal records, tool schemas, stuck detection and the rest.

    python -m benchmarks.loop_overhead --checkpoints 10,100,1000,5000 --window 30
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.loop import Agent
from agent.policies.scripted import ScriptedPolicy
from agent.state import ProjectState
from benchmarks.common import emit, machine, note, ratio, summary_ms
from benchmarks.loop_timing import Clock, StepTiming, TimedPolicy, TimedRegistry, TimedStore, TimedStuckDetector
from benchmarks.loop_workload import BENCH_EVERY, decision
from tools.base import ToolContext, ToolSettings
from tools.hosts.local import LocalHost

TARGET_RATIO = 1.5
TARGET_SAVE_MEDIAN_MS = 5.0


def grow(state: ProjectState, registry: TimedRegistry, context: ToolContext, steps: int, bench_every: int) -> None:
    """Apply the first ``steps`` decisions' tool calls straight to the state (no loop, no saves)."""
    for step in range(steps):
        state.step = step
        for action in decision(step, bench_every)["actions"]:
            result = registry.execute(action["tool"], action["arguments"], context)
            if not result.ok:
                raise RuntimeError(f"workload step {step} failed: {result.error}")
    state.step = steps
    state.usage.steps = steps
    state.loop.policy_state["scripted"] = {"position": steps}


def measure_window(start: int, width: int, bench_every: int, directory: Path) -> tuple[list[StepTiming], int]:
    """Grow a state to ``start`` steps, then time steps ``start+1 .. start+width`` through the loop.
    Returns the timings and the state file's size at the end."""
    clock = Clock()
    store = TimedStore(directory / "state", clock)
    state = ProjectState(goal="tune the deployment (loop overhead benchmark)")
    state.limits.max_steps, state.limits.max_wall_seconds = start + width + 10, 1e9
    context = ToolContext(
        state=state,
        state_dir=store.state_dir,
        host=LocalHost(exit_dir=directory / "exits"),
        settings=ToolSettings(engine_python=sys.executable),
        checkpoint=lambda: store.save(state),
    )
    registry = TimedRegistry(clock)
    grow(state, registry, context, start, bench_every)
    store.save(state)
    decisions = [decision(step, bench_every) for step in range(start + width)]
    policy = TimedPolicy(ScriptedPolicy.from_decisions(decisions), clock)
    agent = Agent(policy, registry, context, store, stuck=TimedStuckDetector(clock))
    timings: list[StepTiming] = []
    for _ in range(width):
        clock.reset()
        wall, cpu = time.perf_counter(), time.process_time()
        agent.step()
        timings.append(clock.step(time.perf_counter() - wall, time.process_time() - cpu))
    store.close()
    return timings, store.latest_path.stat().st_size


def window_report(end: int, timings: list[StepTiming], size: int) -> dict[str, Any]:
    return {
        "step": end,
        "steps_in_window": len(timings),
        "state_bytes": size,
        "overhead_per_step": summary_ms([item.overhead_wall for item in timings]),
        "overhead_cpu_per_step": summary_ms([item.overhead_cpu for item in timings]),
        "save": summary_ms([save for item in timings for save in item.saves]),
        "save_cpu": summary_ms([save for item in timings for save in item.saves_cpu]),
        "saves_per_step": round(sum(len(item.saves) for item in timings) / len(timings), 2),
        "journal_record": summary_ms([record for item in timings for record in item.journal]),
        "schemas_per_step": summary_ms([item.schemas for item in timings]),
        "stuck_check_per_step": summary_ms([item.stuck for item in timings]),
        "other_per_step": summary_ms([item.other_wall for item in timings]),
        "policy_per_step": summary_ms([item.decide for item in timings]),
        "tools_per_step": summary_ms([item.tools for item in timings]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", default="10,100,1000,5000", help="Steps at which to report")
    parser.add_argument("--window", type=int, default=30, help="Steps measured at each checkpoint (ending there)")
    parser.add_argument(
        "--bench-every", type=int, default=BENCH_EVERY, help="Store a benchmark result every N steps (0: never)"
    )
    options = parser.parse_args(argv)
    checkpoints = sorted({int(part) for part in options.checkpoints.split(",") if part.strip()})
    if not checkpoints or checkpoints[0] < 1 or options.window < 1:
        parser.error("checkpoints and --window must be positive")
    started = time.perf_counter()
    reports = []
    for end in checkpoints:
        width = min(options.window, end)
        with tempfile.TemporaryDirectory(prefix="opsloop-loop-bench-") as scratch:
            timings, size = measure_window(end - width, width, options.bench_every, Path(scratch))
        reports.append(window_report(end, timings, size))
        note(
            f"step {end}: state {size / 1e6:.2f} MB, overhead median "
            f"{reports[-1]['overhead_per_step']['median_ms']} ms, save median {reports[-1]['save']['median_ms']} ms"
        )
    by_step = {report["step"]: report for report in reports}
    reference, last = by_step.get(100, reports[0]), reports[-1]
    growth = ratio(last["overhead_per_step"]["median_ms"], reference["overhead_per_step"]["median_ms"])
    growth_cpu = ratio(last["overhead_cpu_per_step"]["median_ms"], reference["overhead_cpu_per_step"]["median_ms"])
    worst_save = max(report["save"]["median_ms"] for report in reports)
    emit(
        {
            "benchmark": "loop_overhead",
            "window": options.window,
            "bench_every": options.bench_every,
            "checkpoints": reports,
            "overhead_ratio": {
                "numerator_step": last["step"],
                "denominator_step": reference["step"],
                "wall": growth,
                "cpu": growth_cpu,
                "target_max": TARGET_RATIO,
                "met": growth is not None and growth <= TARGET_RATIO,
            },
            "save_median": {
                "worst_ms": worst_save,
                "target_max_ms": TARGET_SAVE_MEDIAN_MS,
                "met": worst_save < TARGET_SAVE_MEDIAN_MS,
            },
            "wall_seconds": round(time.perf_counter() - started, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
