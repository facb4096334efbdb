"""The runbook policy: deterministic, offline bring-up of an inference engine.

probe -> plan (on the GPUs, else on the CPU when the engine and memory allow) -> launch -> watch (progress
decides how long) and diagnose -> look past the log when it does not explain a failure (fresh probe, kernel
log) -> climb the remedy ladder one change at a time (revert what did not help) -> correctness probe ->
lossless gate (the baseline's greedy outputs, which every speculative configuration must reproduce) ->
baseline benchmark (single-stream and peak) -> when speculation is wanted: try the off-the-shelf drafter,
train one if it loses (not when the speculative path itself is wrong), keep the faster configuration ->
finish with a report. It asks a human (with the GPUs freed) when the hardware failed, a diagnosis is
unknown or rejected arguments and the engine gave no advice, remedies run out, or the goal cannot be met
here; a stop answer ends the run.
"""

from __future__ import annotations

from agent.actions import Action, Ask, Decision, Finish, Observation
from agent.events import RunFailed
from agent.policies.base import PolicyView
from agent.policies.runbook import calls, drafter
from agent.policies.runbook.answers import apply_answer
from agent.policies.runbook.asking import pending_question
from agent.policies.runbook.choices import advance, compare_finding, finish_serving
from agent.policies.runbook.failures import after_recheck
from agent.policies.runbook.gate import goes_on_despite_wrong_answers, lossless_call, on_lossless
from agent.policies.runbook.goal import parse_goal
from agent.policies.runbook.launches import on_launch, on_launch_refused, record_attempt
from agent.policies.runbook.planning import nodes_checked, plan
from agent.policies.runbook.progress import Measurement, RunbookProgress
from agent.policies.runbook.report import final_report
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.bench.correctness import CorrectnessVerdict
from tools.bench.tools import CheckCorrectnessOutput, CheckLosslessOutput, RunBenchOutput
from tools.cluster.preflight import CheckNodesOutput
from tools.drafter.tools import DrafterOutput
from tools.engines.control import EngineStatusOutput
from tools.engines.launch_io import LaunchEngineOutput
from tools.engines.readiness import ReadinessReport
from tools.kernel_log import ReadKernelLogOutput
from tools.records import LIVE_STATES


class RunbookPolicy:
    name = "runbook"

    def __init__(self, settings: RunbookSettings | None = None) -> None:
        self.settings = settings or RunbookSettings()

    def decide(self, view: PolicyView) -> Decision:
        state = view.state
        progress = RunbookProgress.load(state)
        try:
            for answer in view.new_answers:
                apply_answer(state, progress, answer)
            observation = _awaited(progress, view.observations)
            if observation is not None:
                asked = self._react(state, progress, observation)
                if asked is not None:
                    return Decision(thought=f"blocked in phase {progress.phase}", actions=[asked])
            for _ in range(8):  # pure phases (plan, advance) fall through to the next call
                action = self._next(state, progress)
                if action is not None:
                    if action.kind == "tool_call":
                        progress.awaiting = action.tool
                    return Decision(thought=f"phase {progress.phase} ({progress.purpose})", actions=[action])
            raise RuntimeError(f"runbook made no progress in phase {progress.phase}")
        finally:
            progress.save(state)

    def _react(self, state: ProjectState, progress: RunbookProgress, observation: Observation) -> Ask | None:
        progress.awaiting = None
        result = observation.result
        if observation.interrupted:
            state.add_finding(
                f"{observation.tool} was interrupted (a restart or a dropped connection); verifying and repeating it"
            )
            return None
        if (
            not result.ok
            and observation.tool == "launch_engine"
            and progress.attempts
            and on_launch_refused(state, progress, result.error or "")
        ):
            return None
        if not result.ok and observation.tool == "train_drafter":  # training is optional: never block on it
            drafter.on_refused(state, progress, result.error or "no result")
            return None
        if not result.ok and observation.tool == "read_kernel_log":
            return after_recheck(state, progress, None, self.settings)  # the probe still counts
        if not result.ok or result.output is None:
            return self._on_error(state, progress, observation.tool, result.error or "no result")
        output = result.output
        if observation.tool == "probe_system":
            if progress.phase == "recheck":  # re-probed after a failed launch: the kernel log next
                progress.phase = "recheck_kernel"
            elif progress.phase == "probe":  # else: re-probed to train
                progress.phase = "nodes" if len(state.environment.hosts) > 1 else "plan"
        elif observation.tool == "check_nodes":
            return nodes_checked(progress, CheckNodesOutput.model_validate(output))
        elif observation.tool == "read_kernel_log":
            return after_recheck(state, progress, ReadKernelLogOutput.model_validate(output), self.settings)
        elif observation.tool == "stop_engine" and progress.phase == "stop":
            progress.phase = progress.after_stop
        elif observation.tool == "launch_engine":
            launched = LaunchEngineOutput.model_validate(output)
            return on_launch(
                state,
                progress,
                launched.readiness,
                launched.host_base_url or launched.base_url,
                launched.log_path,
                self.settings,
                reached_at=_elsewhere(launched.base_url, launched.host_base_url),
            )
        elif observation.tool == "engine_status" and progress.phase == "await":
            return self._on_awaited(state, progress, EngineStatusOutput.model_validate(output))
        elif observation.tool == "check_correctness":
            return self._on_correctness(state, progress, CheckCorrectnessOutput.model_validate(output).verdict)
        elif observation.tool == "check_lossless":
            on_lossless(state, progress, CheckLosslessOutput.model_validate(output).verdict)
        elif observation.tool == "run_bench":
            return self._on_bench(state, progress, RunBenchOutput.model_validate(output))
        elif observation.tool == "train_drafter":
            return drafter.on_started(state, progress, DrafterOutput.model_validate(output))
        elif observation.tool == "wait" and progress.phase == "train_sleep":
            progress.phase = "train_wait"
        elif observation.tool == "drafter_status":
            drafter.on_status(state, progress, DrafterOutput.model_validate(output))
        return None

    def _next(self, state: ProjectState, progress: RunbookProgress) -> Action | None:
        phase, settings = progress.phase, self.settings
        if phase in ("probe", "recheck"):
            paths = parse_goal(state.goal).model_paths
            return calls.call(state, "probe_system", {"model_paths": paths} if paths else {})
        if phase == "nodes":
            return calls.call(state, "check_nodes", {})
        if phase == "recheck_kernel":
            return calls.call(state, "read_kernel_log", {})
        if phase == "ask":
            return pending_question(progress)
        if phase == "end":
            return self._end(state, progress)
        if phase == "await":
            return calls.call(
                state, "engine_status", {"name": progress.current, "wait_ready_seconds": settings.keep_waiting_seconds}
            )
        if phase == "plan":
            return plan(state, progress, settings)
        if phase == "launch":
            live = [record for record in state.processes if record.kind == "engine" and record.state in LIVE_STATES]
            if live:  # never two engines on the same GPUs: stop ours first, then launch
                return calls.call(state, "stop_engine", {"name": live[-1].name})
            record_attempt(progress, progress.changes[-1] if _new_change(progress) else f"{progress.purpose} launch")
            return calls.launch(state, progress, settings)
        if phase == "verify":
            return calls.call(
                state, "check_correctness", {"base_url": progress.agent_url, "model": progress.served_model}
            )
        if phase == "lossless":
            return lossless_call(state, progress)
        if phase == "bench":
            return calls.call(
                state, "run_bench", calls.bench_arguments(progress, settings, progress.bench_stage == "single")
            )
        if phase == "advance":
            advance(state, progress, settings)
            return None
        if phase == "train":
            return drafter.next_call(state, progress, settings)
        if phase == "train_wait":
            return calls.drafter_status(state, progress)
        if phase == "train_sleep":
            return calls.wait_for_drafter(state, settings)
        if phase == "finish":
            for task in state.tasks:
                if task.status in ("pending", "in_progress"):
                    task.status = "done" if task.id != "speculative" or progress.speculative_wanted else "skipped"
            return Finish(summary=final_report(state, progress, settings))
        return calls.call(state, "stop_engine", {"name": progress.current})

    def _end(self, state: ProjectState, progress: RunbookProgress) -> Action | None:
        """The operator said stop: stop engines that are still starting, then end done or failed."""
        starting = [
            record
            for record in state.processes
            if record.kind == "engine" and record.state in LIVE_STATES and record.state != "ready"
        ]
        if starting:
            return calls.call(state, "stop_engine", {"name": starting[-1].name})
        ending = progress.ending
        if ending is None or ending.status == "failed":
            raise RunFailed(ending.reason if ending else "stopped on the operator's answer")
        finish_serving(state, progress, self.settings)
        return None

    def _on_awaited(self, state: ProjectState, progress: RunbookProgress, output: EngineStatusOutput) -> Ask | None:
        """The engine watched again after "keep waiting": like the outcome of its launch."""
        readiness = output.readiness
        if readiness is None:
            outcome = "ready" if output.state == "ready" else "exited" if not output.alive else "timeout"
            readiness = ReadinessReport(outcome=outcome, diagnosis=output.diagnosis, exit_code=output.exit_code)
        base_url, reached_at = progress.base_url, progress.reached_at  # no recorded configuration: the launch's
        if output.base_url is not None:
            base_url, reached_at = (
                output.host_base_url or output.base_url,
                _elsewhere(output.base_url, output.host_base_url),
            )
        return on_launch(state, progress, readiness, base_url, output.log_path, self.settings, reached_at=reached_at)

    def _on_correctness(
        self, state: ProjectState, progress: RunbookProgress, verdict: CorrectnessVerdict
    ) -> Ask | None:
        if verdict.passed or goes_on_despite_wrong_answers(state, progress, verdict, self.settings):
            progress.phase = "finish" if progress.purpose == "final" else "lossless"
            state.upsert_task("correctness", status="done")
            return None
        evidence = [
            f"{item.name}: {item.answer[:120]!r} {item.problems}" for item in verdict.results if not item.passed
        ]
        if progress.purpose in calls.SPECULATIVE_PURPOSES:
            # EAGLE verification keeps the target's own output, so wrong text under speculation comes from the
            # speculative path of this engine, not from the drafter's quality: another drafter would not help.
            progress.verdicts[progress.purpose] = "dropped: its output was wrong (garbled answers under speculation)"
            progress.training_pointless = (
                "the speculative path gives wrong output on this engine and GPU, whatever the drafter"
            )
            state.add_finding(f"{progress.purpose} drafter gives wrong output; dropped", evidence=evidence, pinned=True)
            progress.phase = "advance"
            return None
        progress.blocked_on = "garbled_output"
        return Ask(
            question="The engine is up but its answers are wrong or garbled, so its speed does not count. "
            "How should I proceed?",
            evidence=evidence,
            question_kind="garbled_output",
            hypothesis="a kernel or quantisation path that is fast but wrong on this GPU (e.g. CUDA-graph "
            "corruption or an INT4 MoE kernel); try disable_cuda_graph=true",
            options=["KEY=VALUE settings to apply, then retry", "stop here"],
        )

    def _on_bench(self, state: ProjectState, progress: RunbookProgress, output: RunBenchOutput) -> Ask | None:
        silent = [level for level in output.levels if not level.completed]
        if silent:  # no request answered: the engine stopped serving, and these figures mean nothing
            errors = [error for level in silent for error in level.errors]
            return self._on_error(
                state,
                progress,
                "run_bench",
                "every request failed at concurrency "
                f"{', '.join(str(level.concurrency) for level in silent)}; the engine may "
                f"have stopped serving ({'; '.join(errors[:3]) or 'no error given'})",
            )
        measured = f"{progress.purpose} {progress.bench_stage}"
        progress.benchmarks[measured] = output.benchmark_id
        level = output.levels[0]
        accept = (level.spec or {}).get("accept_length")
        progress.measurements[measured] = Measurement(
            output_tok_s=level.output_tok_per_s, accept_length=accept if isinstance(accept, int | float) else None
        )
        if progress.bench_stage == "single":
            progress.bench_stage = "peak"
            return None
        progress.bench_stage = "single"
        if progress.purpose in calls.SPECULATIVE_PURPOSES:
            compare_finding(state, progress, progress.purpose, self.settings)
        elif progress.purpose == "baseline":
            state.upsert_task("baseline", status="done")
        progress.phase = "advance"
        return None

    def _on_error(self, state: ProjectState, progress: RunbookProgress, tool: str, error: str) -> Ask:
        progress.blocked_on = "tool_error"
        state.add_finding(f"{tool} failed in phase {progress.phase}", evidence=[error[:2000]])
        return Ask(
            question=f"{tool} failed and I cannot continue on my own: {error.splitlines()[0][:300]}",
            evidence=[error[:2000]],
            question_kind="tool_error",
            hypothesis="a problem outside the known failure classes; the evidence has the tool's message",
            options=["retry", "KEY=VALUE settings to apply, then retry", "stop here"],
        )


def _awaited(progress: RunbookProgress, observations: list[Observation]) -> Observation | None:
    for observation in reversed(observations):
        if observation.tool == progress.awaiting:
            return observation
    return None


def _new_change(progress: RunbookProgress) -> bool:
    if not progress.changes:
        return False
    recorded = {attempt.change for attempt in progress.attempts}
    return progress.changes[-1] not in recorded


def _elsewhere(agent_url: str, host_url: str | None) -> str | None:
    """Where the agent reaches the server, when that is not its URL on its own host (a simulated host's own
    port, a port forwarded to a remote host); None when they are the same."""
    return agent_url if host_url and agent_url != host_url else None
