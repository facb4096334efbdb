"""Classify an engine log into one diagnosis class, with its root cause, phase, key line and remedies.

Structure before signatures: the bounded window of the log (head and tail) is parsed into error events
(:mod:`tools.logs.events`); the first real error is the root cause, and its innermost frames name the
failing component (:mod:`tools.logs.components`); milestone lines give the start-up phase
(:mod:`tools.logs.phase`). Signatures from the library, the root cause's structure
(:mod:`tools.logs.root_rules`), the phase and the process facts are evidence
(:mod:`tools.logs.evidence`); the strongest wins (:mod:`tools.logs.decide`) and its confidence is
calibrated on the diagnosis corpus. Where the rules find an error but name no cause, a learned model
over the failure's features (:mod:`tools.logs.features`, :mod:`tools.logs.learned`) names the likeliest
one, and otherwise adds its other likely classes as alternatives (:mod:`tools.logs.combine`). Advice the
engine printed near the failure becomes ``engine_hints`` with machine-usable actions
(:mod:`tools.logs.hints`).

Lifecycle rules: once the engine said it was ready only what came after counts; an exited process is
never ``healthy``; an orderly shutdown after ready with nothing wrong before it is ``stopped``; a log that ends
in a traceback is never ``loading``; death after ready is reported as the finding ``died_after_ready`` with
the lines around it. How the process ended comes from the caller (``DiagnosisHints``), else from the last line
the agent's process supervisor writes into the log; the kernel's OOM-killer lines for the engine's processes
decide ``process_killed``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from tools.logs.calibration import load_calibration
from tools.logs.combine import combine
from tools.logs.components import failing_component
from tools.logs.crash_rules import silent_death_evidence
from tools.logs.decide import Decision, decide
from tools.logs.endings import engine_shut_down, operator_stop, server_shut_down, supervisor_exit
from tools.logs.events import ErrorEvent, LogEvents, parse_events
from tools.logs.evidence import (
    Evidence,
    drafter_load_evidence,
    exit_evidence,
    phase_evidence,
    root_cause,
    signature_evidence,
    stack_evidence,
)
from tools.logs.features import FailureContext, failure_features, has_error_text
from tools.logs.hints import engine_hints
from tools.logs.kernel import kernel_evidence
from tools.logs.learned import LearnedModel, load_model
from tools.logs.library import NO_FAILURE_CLASSES, SignatureLibrary, load_library
from tools.logs.lifecycle import no_failure_decision
from tools.logs.measurements import acceptance_evidence, nccl_tests_exit_evidence, wrong_results_evidence
from tools.logs.models import Alternative, Diagnosis, DiagnosisHints, EngineGuess, FrameInfo, Remedy, RootCause
from tools.logs.phase import drafter_loading, last_phase
from tools.logs.request_errors import (
    NO_PROGRESS_SIGNATURE,
    answered_before_errors,
    request_errors,
    serving_despite_request_errors,
    without,
)
from tools.logs.root_rules import hint_evidence, root_evidence
from tools.logs.signals import (
    detect_engine,
    last_progress,
    last_ready,
    offline_batch_done,
    ready_after_failed_warmup,
)
from tools.logs.window import LogWindow, read_window

__all__ = ["Alternative", "Diagnoser", "Diagnosis", "DiagnosisHints", "Remedy", "diagnose_file", "diagnose_text"]
HINT_LINES_BEFORE = 3
HINT_LINES_AFTER = 30
ROOT_FRAMES = 6
# Deaths reported after a Python exception are usually its consequence (the launcher ending the other
# workers, a worker exiting on the error): they yield to the exception, even one no rule explains.
# Signatures that follow from a rank's death: words of the death, and the store retries of the ranks left behind.
CONSEQUENCES_OF_AN_ERROR = frozenset(
    {"process-death-wording", "engine-core-died", "sigkill-exit", "store-connect-retrying"}
)
CONSEQUENCE_PRIORITY = 8
AROUND_BEFORE = 4  # lines shown before and after a death that followed the ready line
AROUND_AFTER = 8


@dataclass
class RulesOutcome:
    decision: Decision
    root: ErrorEvent | None
    events: LogEvents
    age: float | None
    ready: int | None  # the ready line, when the engine said it was ready


def _root_model(event: ErrorEvent, numbers: list[int | None]) -> RootCause:
    return RootCause(
        type=event.type,
        message=event.message[:500],
        component=failing_component(event.frames),
        kind=event.kind,
        origin=event.origin,
        line_number=numbers[event.index],
        frames=[
            FrameInfo(file=frame.path, line=frame.line, function=frame.function) for frame in event.frames[:ROOT_FRAMES]
        ],
    )


def _deaths_yield_to_their_cause(found: list[Evidence], root: ErrorEvent | None) -> list[Evidence]:
    """Signatures of an error's consequences (deaths, store retries) after the root cause's Python exception drop
    below an unexplained error."""
    if root is None or root.kind == "crash" or root.type is None:
        return found
    return [
        replace(item, priority=CONSEQUENCE_PRIORITY)
        if item.signature in CONSEQUENCES_OF_AN_ERROR and item.index is not None and item.index > root.index
        else item
        for item in found
    ]


def _stalls_yield_to_a_death(found: list[Evidence]) -> list[Evidence]:
    """vLLM's broadcast queue stalls for good once a worker process is gone: with a death the log reports, the
    stall notices around it are its consequence."""
    if not any(item.signature == "process-death-wording" for item in found):
        return found
    return [
        replace(item, priority=CONSEQUENCE_PRIORITY) if item.signature == NO_PROGRESS_SIGNATURE else item
        for item in found
    ]


class Diagnoser:
    """Applies the library to one window; build it with :func:`diagnose_file` or :func:`diagnose_text`."""

    def __init__(
        self, window: LogWindow, hints: DiagnosisHints, library: SignatureLibrary, model: LearnedModel | None = None
    ) -> None:
        self.window = window
        written = supervisor_exit(window) if hints.exit_code is None else None
        self.hints = (
            hints if written is None else hints.model_copy(update={"exit_code": written, "process_alive": False})
        )
        self.library = library
        self.model = model if model is not None else load_model()
        self.engine: EngineGuess = hints.engine or detect_engine(window)

    def remedies(self, identifiers: list[str], diagnosis_class: str) -> list[Remedy]:
        ordered = list(dict.fromkeys(identifiers))
        if diagnosis_class in ("nccl_hang", "nccl_error") and "nccl_p2p_disable" in ordered:
            ordered.remove("nccl_p2p_disable")
            position = 0 if self.hints.interconnect == "pcie" else min(1, len(ordered))
            ordered.insert(position, "nccl_p2p_disable")
        return [
            Remedy(
                id=identifier,
                text=self.library.remedies[identifier].text,
                action=self.library.remedies[identifier].action.compact(),
            )
            for identifier in ordered
        ]

    def _evidence(self, events: LogEvents, root: ErrorEvent | None, start: int) -> list[Evidence]:
        engine = None if self.engine == "unknown" else self.engine
        found = signature_evidence(self.window, self.library, engine, start, events.source_lines, root)
        found += root_evidence(root, self.window, self.library)
        found += stack_evidence(events, start, self.library)
        found = _stalls_yield_to_a_death(_deaths_yield_to_their_cause(found, root))
        failure_lines = [
            item.index for item in found if item.index is not None and item.diagnosis_class not in NO_FAILURE_CLASSES
        ]
        failure_index = min(failure_lines) if failure_lines else (root.index if root is not None else None)
        phase = last_phase(self.window, self.library, before=failure_index) if failure_index is not None else None
        if phase is not None and failure_index is not None:
            found += phase_evidence(phase.phase, failure_index, self.library)
            if drafter_loading(self.window, self.library, failure_index):
                found += drafter_load_evidence(found, self.library)
        found += exit_evidence(self.hints.exit_code, len(self.window.lines) - 1, self.library)
        found += kernel_evidence(self.hints.kernel_lines, len(self.window.lines) - 1, self.library)
        if not any(item.diagnosis_class not in NO_FAILURE_CLASSES | {"unknown"} for item in found):
            found += silent_death_evidence(events, root, self.library)
        if root is not None and not any(item.diagnosis_class not in NO_FAILURE_CLASSES for item in found):
            found.append(
                Evidence(
                    "error",
                    "unknown",
                    10,
                    0.35,
                    root.index,
                    "an error that no rule explains",
                    ["inspect_traceback"],
                    "An error was logged; no known cause matches it.",
                )
            )
            found += hint_evidence(root, phase.phase if phase is not None else "not_started", self.library)
        measured = acceptance_evidence(self.window) + wrong_results_evidence(self.window)
        return found + measured + nccl_tests_exit_evidence(self.window, self.hints.exit_code)

    def rules(self, log_age_seconds: float | None) -> RulesOutcome:
        """What the structural parse and the rules decide, before the learned model is consulted."""
        window = self.window
        engine = None if self.engine == "unknown" else self.engine
        events = parse_events(window.lines)
        ready = last_ready(window, self.library, engine)
        if ready is not None and ready_after_failed_warmup(window, self.library, ready):
            ready = None
        if ready is None:
            ready = answered_before_errors(window, self.library, events)
        exited = self.hints.exit_code is not None or self.hints.process_alive is False
        failed_requests = [] if ready is None or exited else request_errors(events, ready)
        serving = None if ready is not None or exited else serving_despite_request_errors(window, self.library, events)
        if serving is not None:
            ready, failed_requests = serving
        start = 0 if ready is None else ready + 1  # once ready, only what went wrong afterwards counts
        events = without(events, failed_requests)
        root = root_cause(events, start, window.lines)
        error_lines = [event.first_index for event in events.real()]
        stop = operator_stop(window, ready)
        if stop is None:  # an offline run that finished its prompts: what its teardown reports is no failure
            stop = offline_batch_done(window, error_lines)
        if stop is None:  # the engine core stopped in order: its client's report of its "death" is that stop
            stop = engine_shut_down(window, error_lines)
        if stop is None:  # the HTTP server stopped in order: its children ending on its signal are that stop
            stop = server_shut_down(window, error_lines)
        if stop is not None and root is not None and root.first_index > stop:
            root = None
        # Before ready, the interrupt's own stack still shows where start-up was stuck (a collective: a hang).
        found = [
            item
            for item in self._evidence(events, root, start)
            if stop is None or item.index is None or item.index < stop or (ready is None and item.source == "stack")
        ]
        calibration = load_calibration()
        decision = decide(found, calibration, window.numbers)
        age = self.hints.seconds_since_output if self.hints.seconds_since_output is not None else log_age_seconds
        if decision is None:
            decision = no_failure_decision(window, self.library, self.hints, ready, age, calibration)
        elif ready is not None:
            decision.findings.append("died_after_ready" if exited else "failed_after_ready")
        if failed_requests:
            decision.findings.append("requests_failed")
        if {"died_after_ready", "failed_after_ready"} & set(decision.findings):
            decision.lines_around = self._around(decision.index)
        if events.ends_in_traceback and "ends_in_traceback" not in decision.findings:
            decision.findings.append("ends_in_traceback")
        return RulesOutcome(decision, root, events, age, ready)

    def features(self, outcome: RulesOutcome) -> list[str] | None:
        """The learned model's features of this log's failure (see :mod:`tools.logs.features`); None when
        the log has no error text for the model to read."""
        decision, root = outcome.decision, outcome.root
        before = decision.index if decision.diagnosis_class not in NO_FAILURE_CLASSES else None
        phase = last_phase(self.window, self.library, before=before) if before is not None else None
        age = outcome.age
        context = FailureContext(
            root=root,
            component=failing_component(root.frames) if root is not None else None,
            phase=(phase or last_phase(self.window, self.library)).phase,
            engine=self.engine,
            key_index=decision.index,
            exit_code=self.hints.exit_code,
            exited=self.hints.exit_code is not None or self.hints.process_alive is False,
            stalled=age is not None and age >= self.hints.stale_after_seconds,
            ready_seen=outcome.ready is not None,
            ends_in_traceback=outcome.events.ends_in_traceback,
        )
        return failure_features(self.window, context) if has_error_text(self.window, context) else None

    def diagnose(self, log_age_seconds: float | None) -> Diagnosis:
        if not self.window.lines:
            return Diagnosis(
                diagnosis_class="unknown",
                confidence=0.1,
                summary="The log is empty.",
                remedies=self.remedies(["keep_waiting"], "unknown"),
                engine=self.engine,
            )
        outcome = self.rules(log_age_seconds)
        decision = outcome.decision
        features = self.features(outcome) if decision.diagnosis_class not in NO_FAILURE_CLASSES else None
        if features is not None:
            scores = self.model.posterior(features)
            decision = combine(decision, scores, load_calibration(), self.window.numbers, self.library)
        return self._assemble(decision, outcome.root, outcome.events, outcome.age)

    def _assemble(self, decision: Decision, root: ErrorEvent | None, events: LogEvents, age: float | None) -> Diagnosis:
        window, index = self.window, decision.index
        progress = last_progress(window, self.library)
        evidence = [self._cite(progress[0])] if progress is not None and progress[0] != index else []
        evidence += [f"kernel: {line}" for line in self.hints.kernel_lines[-3:]]
        failure = decision.diagnosis_class not in NO_FAILURE_CLASSES
        hints = []
        if failure and index is not None:
            around = range(max(index - HINT_LINES_BEFORE, 0), min(index + HINT_LINES_AFTER, len(window.lines)))
            hints = engine_hints(window.lines, window.numbers, list(around))
        return Diagnosis(
            diagnosis_class=decision.diagnosis_class,
            confidence=decision.confidence,
            raw_confidence=decision.raw_confidence,
            line_number=window.numbers[index] if index is not None else None,
            key_line=window.lines[index] if index is not None else None,
            remedies=self.remedies(decision.remedies, decision.diagnosis_class),
            engine=self.engine,
            summary=decision.summary or f"{decision.why[:1].upper()}{decision.why[1:]}.",
            why=decision.why,
            signature=decision.signature,
            evidence=evidence,
            lines_from_end=window.lines_from_end(index) if index is not None else None,
            progress=progress[2] if progress else None,
            log_size_bytes=window.file_size,
            bytes_read=window.bytes_read,
            root_cause=_root_model(root, window.numbers) if root is not None and failure else None,
            phase=last_phase(window, self.library).phase,
            engine_hints=hints,
            alternatives=decision.alternatives,
            findings=decision.findings,
            decided_by=decision.decided_by,
            lines_around=decision.lines_around,
            exit_code=self.hints.exit_code,
            log_age_seconds=round(age, 1) if age is not None else None,
        )

    def _around(self, index: int | None) -> list[str]:
        if index is None:
            return []
        last = min(index + AROUND_AFTER + 1, len(self.window.lines))
        return [self._cite(position) for position in range(max(index - AROUND_BEFORE, 0), last)]

    def _cite(self, index: int) -> str:
        number = self.window.numbers[index]
        return f"{number if number is not None else '?'}: {self.window.lines[index]}"


def text_window(text: str) -> LogWindow:
    """A window over log text held in memory (line numbers start at 1)."""
    lines = text.splitlines()
    offsets: list[int] = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line.encode()) + 1
    return LogWindow(
        lines=lines,
        numbers=list(range(1, len(lines) + 1)),
        offsets=offsets,
        file_size=len(text.encode()),
        bytes_read=len(text.encode()),
        whole_file=True,
    )


def diagnose_text(
    text: str,
    hints: DiagnosisHints | None = None,
    library: SignatureLibrary | None = None,
    model: LearnedModel | None = None,
) -> Diagnosis:
    """Diagnose log text held in memory (line numbers start at 1)."""
    return Diagnoser(text_window(text), hints or DiagnosisHints(), library or load_library(), model).diagnose(None)


def diagnose_file(
    path: Path,
    hints: DiagnosisHints | None = None,
    library: SignatureLibrary | None = None,
    *,
    tail_bytes: int | None = None,
    head_bytes: int | None = None,
) -> Diagnosis:
    """Diagnose a log file reading only a bounded head and tail (see :mod:`tools.logs.window`)."""
    sizes: dict[str, int] = {}
    if tail_bytes is not None:
        sizes["tail_bytes"] = tail_bytes
    if head_bytes is not None:
        sizes["head_bytes"] = head_bytes
    window = read_window(path, **sizes)
    age = max(time.time() - path.stat().st_mtime, 0.0)
    return diagnose_window(window, str(path), age, hints, library)


def diagnose_window(
    window: LogWindow,
    log_path: str,
    age_seconds: float | None,
    hints: DiagnosisHints | None = None,
    library: SignatureLibrary | None = None,
) -> Diagnosis:
    """Diagnose a window already read (from a file here or on another host); ``age_seconds`` since its last write."""
    diagnosis = Diagnoser(window, hints or DiagnosisHints(), library or load_library()).diagnose(age_seconds)
    diagnosis.log_path = log_path
    return diagnosis
