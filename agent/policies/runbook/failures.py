"""A launch that failed: look past its log when the log does not explain it, then climb the remedy ladder
of its failure class (the engine's own advice, the library's remedies), or ask a person.

The order: the last change is judged (and reverted when it did not help); a failure whose cause may lie
outside the engine (NCCL errors and hangs, a killed or unexplained death) sends the runbook to re-probe
the hardware and read the kernel log first (``phase = recheck``), and hardware evidence found there is
asked about at once; a drafter configuration that fails is dropped with its reason; otherwise the next
change within bounds is made, and when none is left a person is asked, with the GPUs freed.
"""

from __future__ import annotations

from agent.actions import Ask
from agent.policies.runbook.asking import ask
from agent.policies.runbook.calls import SPECULATIVE_PURPOSES
from agent.policies.runbook.hardware import hardware_question, host_evidence, needs_recheck
from agent.policies.runbook.ladders import candidates, judge_last_step, next_step, remember, take_step
from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.kernel_log import ReadKernelLogOutput
from tools.logs.diagnose import Diagnosis

# Classes no launch change from the library fixes: only the engine's own advice is tried before asking.
ESCALATE_CLASSES = {"unknown": "unknown_failure", "gpu_hardware_fault": "hardware", "config_error": "config_error"}


def _evidence(diagnosis: Diagnosis, log_path: str | None = None) -> list[str]:
    evidence = []
    if diagnosis.key_line:
        evidence.append(f"line {diagnosis.line_number}: {diagnosis.key_line}")
    evidence += diagnosis.evidence[:4]
    evidence += [f"the engine says: {hint.evidence[:200]}" for hint in diagnosis.engine_hints[:2]]
    if log_path or diagnosis.log_path:
        evidence.append(f"log: {log_path or diagnosis.log_path}")
    return evidence


def on_failure(
    state: ProjectState,
    progress: RunbookProgress,
    diagnosis: Diagnosis,
    exit_code: int | None,
    log_path: str | None,
    settings: RunbookSettings,
) -> Ask | None:
    """The attempt failed (exited or hung): judge the last change, then look past the log or go on."""
    attempt = progress.attempts[-1]
    diagnosis = diagnosis.model_copy(update={"log_path": diagnosis.log_path or log_path})
    progress.failure = diagnosis.model_dump(mode="json", by_alias=True)
    if needs_recheck(diagnosis.diagnosis_class, exit_code):
        state.add_finding(
            f"attempt {attempt.number} failed with {diagnosis.diagnosis_class}, which the engine log alone does not "
            "explain: probing the GPUs again and reading the kernel log",
            evidence=_evidence(diagnosis)[:2],
        )
        progress.phase = "recheck"
        return None
    return go_on(state, progress, diagnosis, settings)


def after_recheck(
    state: ProjectState, progress: RunbookProgress, kernel: ReadKernelLogOutput | None, settings: RunbookSettings
) -> Ask | None:
    """The fresh probe is in the state and the kernel log was read: hardware first, else go on."""
    diagnosis = Diagnosis.model_validate(progress.failure or {"class": "unknown", "confidence": 0.0})
    attempt = progress.attempts[-1]
    found = host_evidence(state, progress, attempt, kernel)
    if kernel is not None and not kernel.readable:
        state.add_finding(f"the kernel log could not be read: {kernel.error}")
    if found is None:
        state.add_finding(f"attempt {attempt.number}: the probe and the kernel log show no hardware fault")
        return go_on(state, progress, diagnosis, settings)
    state.add_finding(f"attempt {attempt.number}: {found.summary}", evidence=found.lines[:6], pinned=True)
    question, hypothesis = hardware_question(found, attempt)
    return ask(state, progress, found.kind, question, found.lines + _evidence(diagnosis), hypothesis)


def go_on(
    state: ProjectState, progress: RunbookProgress, diagnosis: Diagnosis, settings: RunbookSettings
) -> Ask | None:
    """Drop a failing drafter configuration, or make the next change, or ask."""
    attempt, klass = progress.attempts[-1], diagnosis.diagnosis_class
    evidence = _evidence(diagnosis)
    alive = attempt.outcome in ("hung", "timeout")
    progress.after_stop = "launch"
    if klass == "gpu_hardware_fault":
        question = (
            "A GPU reported a hardware fault while the engine started; retrying could make it worse. "
            "Please check the GPU (nvidia-smi -q, kernel log) and tell me how to proceed."
        )
        return ask(state, progress, "hardware", question, evidence, "a failing GPU (Xid/ECC error)")
    if progress.purpose in SPECULATIVE_PURPOSES:
        reason = f"failed to start ({klass}: {diagnosis.key_line or diagnosis.summary or 'see the log'})"
        progress.verdicts[progress.purpose] = f"dropped: {reason}"
        state.add_finding(f"{progress.purpose} drafter configuration {reason}; it is dropped", evidence=evidence)
        progress.after_stop = "advance"
        progress.phase = "stop" if alive else "advance"
        return None
    last = judge_last_step(state, progress, attempt)
    target = last.diagnosis if last is not None and last.verdict == "reverted" else klass
    remember(progress, klass, candidates(diagnosis))
    counted = [item for item in progress.attempts[progress.attempts_forgiven :] if item.purpose == attempt.purpose]
    if len(counted) >= settings.max_attempts:
        return _exhausted(state, progress, diagnosis, f"{len(counted)} launch attempts failed; the last one: {klass}")
    step = next_step(state, progress, target, last)
    if step is None:
        return (
            _escalate(state, progress, diagnosis)
            if klass in ESCALATE_CLASSES
            else _exhausted(
                state, progress, diagnosis, f"the engine still fails with {klass} after the remedies I have"
            )
        )
    candidate, new_config, changes = step
    take_step(progress, target, candidate, new_config, changes)
    progress.changes.append(f"{', '.join(changes)} after {target} ({diagnosis.key_line or 'see log'})")
    state.add_finding(f"attempt {attempt.number} failed with {klass}; next: {candidate.text}", evidence=evidence)
    progress.phase = "stop" if alive else "launch"
    return None


def _exhausted(state: ProjectState, progress: RunbookProgress, diagnosis: Diagnosis, question: str) -> Ask | None:
    human = [remedy.text for remedy in diagnosis.remedies if remedy.action.get("needs_human")]
    tried = [step.remedy for step in progress.steps]
    hypothesis = human[0] if human else f"the known remedies for {diagnosis.diagnosis_class} are exhausted"
    evidence = _evidence(diagnosis) + ([f"tried: {', '.join(tried)}"] if tried else [])
    return ask(state, progress, "exhausted", question, evidence, hypothesis)


def _escalate(state: ProjectState, progress: RunbookProgress, diagnosis: Diagnosis) -> Ask | None:
    klass, attempt = diagnosis.diagnosis_class, progress.attempts[-1]
    if klass == "config_error":
        question = (
            "The engine rejected its launch arguments (see the key line for its reason). Tell me which "
            "setting to change (e.g. reasoning_parser=kimi_k2 or attention_backend=triton), or fix the "
            "launch and answer 'retry'."
        )
        reason = diagnosis.root_cause.message if diagnosis.root_cause and diagnosis.root_cause.message else ""
        hypothesis = reason or diagnosis.summary or "a flag or value the installed engine release does not accept"
    else:
        question = (
            f"The engine {attempt.outcome} with an error I have no remedy for. Please look at the evidence and "
            "tell me what to change (you can answer with settings such as attention_backend=triton "
            "or NCCL_P2P_DISABLE=1), or fix the environment and answer 'retry'."
        )
        hypothesis = diagnosis.summary or "an unknown fatal error in the engine; see the key line"
    keep = None
    if attempt.outcome == "hung":
        keep = f"a stack dump of the hung process (py-spy dump --pid of {attempt.process}) shows where it waits"
    return ask(state, progress, ESCALATE_CLASSES[klass], question, _evidence(diagnosis), hypothesis, keep)
