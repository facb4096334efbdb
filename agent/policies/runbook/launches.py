"""Reacting to an engine launch: ready, or diagnosed and remedied one change at a time, or escalated."""

from __future__ import annotations

from agent.actions import Ask
from agent.policies.runbook.calls import SPECULATIVE_PURPOSES
from agent.policies.runbook.progress import Attempt, RunbookProgress
from agent.policies.runbook.remedies import applicable, apply_remedy, for_device
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.engines.launch_io import LaunchEngineOutput
from tools.logs.diagnose import Diagnosis

# Classes no launch change of the runbook's own can fix: a person is asked, with the evidence.
ESCALATE_CLASSES = {"unknown": "unknown_failure", "gpu_hardware_fault": "hardware", "config_error": "config_error"}


def _evidence(diagnosis: Diagnosis, log_path: str | None) -> list[str]:
    evidence = []
    if diagnosis.key_line:
        evidence.append(f"line {diagnosis.line_number}: {diagnosis.key_line}")
    evidence += diagnosis.evidence[:4]
    if log_path:
        evidence.append(f"log: {log_path}")
    return evidence


def on_launch(
    state: ProjectState, progress: RunbookProgress, output: LaunchEngineOutput, settings: RunbookSettings
) -> Ask | None:
    """Record the attempt's outcome and choose the next phase. Returns a question when blocked."""
    attempt = progress.attempts[-1]
    outcome = output.readiness.outcome
    attempt.outcome = outcome
    progress.current = attempt.process
    if outcome == "ready":
        progress.base_url = output.base_url
        progress.phase, progress.bench_stage = "verify", "single"
        if progress.purpose == "training_target":
            progress.phase = "train"
        return None
    diagnosis = output.readiness.diagnosis or Diagnosis(diagnosis_class="unknown", confidence=0.0)
    klass = diagnosis.diagnosis_class
    attempt.diagnosis, attempt.key_line = klass, diagnosis.key_line
    evidence = _evidence(diagnosis, output.log_path)
    # A hung or still-loading engine holds its GPUs: stop it before anything else.
    progress.after_stop = "launch"
    progress.phase = "stop" if outcome in ("hung", "timeout") else "launch"
    if klass in ESCALATE_CLASSES:
        return _ask_about_failure(progress, klass, outcome, evidence, diagnosis)
    if progress.purpose in SPECULATIVE_PURPOSES:
        state.add_finding(
            f"{progress.purpose} drafter configuration failed to start ({klass}); "
            "it is dropped and the run goes on without it",
            evidence=evidence,
        )
        progress.after_stop = "advance"
        progress.phase = "stop" if outcome in ("hung", "timeout") else "advance"
        return None
    same_purpose = [item for item in progress.attempts[progress.attempts_forgiven :] if item.purpose == attempt.purpose]
    if len(same_purpose) >= settings.max_attempts:
        return _ask(
            progress,
            "exhausted",
            f"{len(same_purpose)} launch attempts failed; the last one: {klass}",
            evidence,
            "the remedies tried so far did not bring the engine up",
        )
    return _apply_next_remedy(state, progress, klass, diagnosis, evidence)


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


def _apply_next_remedy(
    state: ProjectState, progress: RunbookProgress, klass: str, diagnosis: Diagnosis, evidence: list[str]
) -> Ask | None:
    tried = progress.tried.setdefault(klass, [])
    human_only: list[str] = []
    for remedy in diagnosis.remedies:
        if remedy.id in tried:
            continue
        action = for_device(remedy.action, progress.base_config, progress.cpu_kv_space_max_gib)
        if not applicable(action):
            if action.get("needs_human"):
                human_only.append(remedy.text)
            continue
        new_config, changes = apply_remedy(progress.base_config, action)
        tried.append(remedy.id)
        if not changes:
            continue
        progress.base_config = new_config
        why = f"{', '.join(changes)} after {klass}"
        progress.changes.append(f"{why} ({diagnosis.key_line or 'see log'})")
        state.add_finding(
            f"attempt {len(progress.attempts)} failed with {klass}; next: {remedy.text}", evidence=evidence
        )
        return None
    hypothesis = human_only[0] if human_only else f"the known remedies for {klass} are exhausted"
    return _ask(
        progress,
        "exhausted",
        f"the engine still fails with {klass} after {', '.join(tried) or 'no'} remedies",
        evidence,
        hypothesis,
    )


def _ask_about_failure(
    progress: RunbookProgress, klass: str, outcome: str, evidence: list[str], diagnosis: Diagnosis
) -> Ask:
    if klass == "gpu_hardware_fault":
        question = (
            "A GPU reported a hardware fault while the engine started; retrying could make it worse. "
            "Please check the GPU (nvidia-smi -q, kernel log) and tell me how to proceed."
        )
        hypothesis = "a failing GPU (Xid/ECC error); it may need a reset, a reboot or replacement"
    elif klass == "config_error":
        question = (
            "The engine rejected its launch arguments (see the key line for its reason). Tell me which "
            "setting to change (e.g. reasoning_parser=kimi_k2 or attention_backend=triton), or fix the "
            "launch and answer 'retry'."
        )
        reason = diagnosis.root_cause.message if diagnosis.root_cause and diagnosis.root_cause.message else ""
        hypothesis = reason or diagnosis.summary or "a flag or value the installed engine release does not accept"
    else:
        question = (
            f"The engine {outcome} with an error I have no remedy for. Please look at the evidence and "
            "tell me what to change (you can answer with settings such as attention_backend=triton "
            "or NCCL_P2P_DISABLE=1), or fix the environment and answer 'retry'."
        )
        hypothesis = diagnosis.summary or "an unknown fatal error in the engine; see the key line"
    return _ask(progress, ESCALATE_CLASSES[klass], question, evidence, hypothesis)


def _ask(progress: RunbookProgress, kind: str, question: str, evidence: list[str], hypothesis: str) -> Ask:
    progress.blocked_on = kind
    return Ask(
        question=question,
        evidence=evidence,
        hypothesis=hypothesis,
        question_kind=kind,
        context=f"bringing up {progress.served_model} with {progress.engine}; "
        f"{len(progress.attempts)} launch attempts so far",
        options=["retry", "KEY=VALUE settings to apply, then retry", "stop here"],
    )


def record_attempt(progress: RunbookProgress, change: str) -> Attempt:
    attempt = Attempt(
        number=len(progress.attempts) + 1, purpose=progress.purpose, process=progress.launch_name(), change=change
    )
    progress.attempts.append(attempt)
    return attempt
