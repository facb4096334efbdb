"""Reacting to an engine launch: ready, still loading past its deadline, refused, or failed (see
``failures.py``)."""

from __future__ import annotations

from agent.actions import Ask
from agent.policies.runbook.asking import ask
from agent.policies.runbook.failures import on_failure
from agent.policies.runbook.ladders import judge_last_step, shortfall_gib
from agent.policies.runbook.progress import Attempt, RunbookProgress
from agent.policies.runbook.remedies import apply_remedy
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.engines.readiness import ReadinessReport
from tools.logs.diagnose import Diagnosis


def on_launch(
    state: ProjectState,
    progress: RunbookProgress,
    readiness: ReadinessReport,
    base_url: str | None,
    log_path: str | None,
    settings: RunbookSettings,
    reached_at: str | None = None,
) -> Ask | None:
    """Record the attempt's outcome and choose the next phase. Returns a question when blocked now.
    ``reached_at``: where this machine reaches ``base_url`` when the host serves it elsewhere."""
    attempt = progress.attempts[-1]
    attempt.outcome = readiness.outcome
    progress.current = attempt.process
    progress.engine_settings.update(readiness.engine_settings)
    if readiness.outcome == "ready":
        judge_last_step(state, progress, attempt)
        progress.base_url, progress.reached_at = base_url, reached_at
        progress.phase, progress.bench_stage = "verify", "single"
        if progress.purpose == "training_target":
            progress.phase = "train"
        return None
    diagnosis = readiness.diagnosis or Diagnosis(diagnosis_class="unknown", confidence=0.0)
    attempt.diagnosis, attempt.key_line = diagnosis.diagnosis_class, diagnosis.key_line
    attempt.phase, attempt.shortfall_gib = diagnosis.phase, shortfall_gib(diagnosis)
    if readiness.outcome == "timeout":
        return _still_loading(state, progress, readiness)
    return on_failure(state, progress, diagnosis, readiness.exit_code, log_path, settings)


def _still_loading(state: ProjectState, progress: RunbookProgress, readiness: ReadinessReport) -> Ask | None:
    """Alive and active, but past the deadline its own progress allowed: the load is the evidence, so it
    keeps running while a person decides."""
    attempt = progress.attempts[-1]
    evidence = [
        f"progress: {readiness.progress_note}",
        f"activity seen: {', '.join(readiness.activity_seen) or 'none'}; quiet for {readiness.quiet_seconds:.0f} s",
        *readiness.milestones[-3:],
    ]
    state.add_finding(f"attempt {attempt.number}: still loading past its deadline", evidence=evidence)
    return ask(
        state,
        progress,
        "slow_load",
        f"{attempt.process} is alive and still starting, but it is past the time its own progress allowed "
        f"({readiness.progress_note}). Should I keep waiting for it, or stop?",
        evidence,
        "a load slower than its rate so far (slow storage, a long post-load step); it is not hung",
        keep_alive_because="stopping it would throw away the load so far",
        options=["keep waiting", "stop here", "KEY=VALUE settings to apply, then retry"],
    )


def on_launch_refused(state: ProjectState, progress: RunbookProgress, error: str) -> bool:
    """launch_engine refused before starting anything. A port held by a process we did not start moves the
    launch to a free port (True: handled); any other refusal is for the caller to escalate."""
    progress.attempts[-1].outcome = "refused"
    if not error.startswith("port_in_use"):
        return False
    progress.attempts[-1].diagnosis = "port_in_use"
    progress.base_config, changes = apply_remedy(progress.base_config, {"pick_free_port": True})
    progress.changes.append(f"{', '.join(changes)} after port_in_use ({error.split(';')[0]})")
    state.add_finding(
        f"attempt {len(progress.attempts)}: the port is held by another process; moving to a free one", evidence=[error]
    )
    return True


def record_attempt(progress: RunbookProgress, change: str) -> Attempt:
    attempt = Attempt(
        number=len(progress.attempts) + 1, purpose=progress.purpose, process=progress.launch_name(), change=change
    )
    progress.attempts.append(attempt)
    return attempt
