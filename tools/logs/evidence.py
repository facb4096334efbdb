"""Evidence for a diagnosis class: signatures, the failing component, the start-up phase, process facts.

Each source proposes classes with a priority (which explanation wins when several apply: root causes
above their consequences, specific wording above structure, structure above the phase) and a raw
confidence; :mod:`tools.logs.decide` picks the class. Evidence from the root cause's structure is in
:mod:`tools.logs.root_rules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from tools.logs.components import failing_component
from tools.logs.events import ErrorEvent, LogEvents
from tools.logs.library import DiagnosisClass, Signature, SignatureLibrary
from tools.logs.phase import Phase, last_phase
from tools.logs.prefixes import split_line
from tools.logs.signals import KERNEL_BUILD_LINE, SELF_REPORT, last_match
from tools.logs.window import LogWindow

LAST_LINES = 30
_INFO_LEVELS = ("INFO", "DEBUG", "WARNING", "WARN")
_NCCL_INFO = " NCCL INFO "  # NCCL's own informational lines ("host:pid:tid [0] NCCL INFO ...")
# Priorities of structural evidence, between the specific signatures (77..100) and the generic ones (5..30).
STACK_HANG_PRIORITY = {"speculative": 71, "distributed": 64}
PHASE_PRIORITY = {"drafter": 40, "cuda_graph": 38}
_PHASE_CLASS: dict[str, tuple[DiagnosisClass, float]] = {
    "drafter": ("spec_decode_problem", 0.55),
    "cuda_graph": ("cuda_graph_capture_failure", 0.5),
}
KILLED_EXIT_CODES = (-9, 137)  # SIGKILL: the kernel OOM killer, an orchestrator, a person
# SIGSEGV, SIGBUS, SIGILL, SIGFPE: died in native code (an abort is often an interpreter check, so not SIGABRT)
SIGNAL_EXIT_CODES = (-11, 139, -7, 135, -4, 132, -8, 136)
HANGUP_EXIT_CODES = (-1, 129)  # SIGHUP: the terminal or session that started it closed; nothing handles it
# SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM: sent by another process (or Ctrl+Backslash); the engine does not handle them
SENT_SIGNAL_EXIT_CODES = (-3, 131, -10, 138, -12, 140, -14, 142)
SURVIVAL_LOOKAHEAD_LINES = 200
BUILD_LOOKBACK_LINES = 40
# How long notices may follow a kernel build before they mean a hang: first builds of large kernels (FlashInfer's,
# DeepGEMM's) take several minutes, and say so.
BUILD_PATIENCE_SECONDS = 600
_NOTICE_SECONDS = re.compile(r"found in (\d+) second")
_STOPPING = re.compile(
    r"[Ss]hut(?:ting)? ?down|[Tt]erminat|[Ee]xit|[Kk]ill|[Ss]top|[Cc]lean(?:ing)? ?up|[Aa]bort|[Ff]ail"
)


EvidenceSource = Literal[
    "signature", "component", "stack", "phase", "exit", "acceptance", "measurement", "error", "hint", "silent_death"
]


@dataclass
class Evidence:
    source: EvidenceSource
    diagnosis_class: DiagnosisClass
    priority: int
    confidence: float  # raw, before calibration
    index: int | None  # the most telling line
    why: str
    remedies: list[str] = field(default_factory=list)
    summary: str = ""
    signature: str | None = None


def _first_match(
    regex: re.Pattern[str],
    window: LogWindow,
    skip: set[int],
    library: SignatureLibrary,
    start_line: int,
    not_on_info_lines: bool = False,
) -> int | None:
    """Index of the first line at or after ``start_line`` that the regex matches and that is not harmless,
    an echo of source code, an INFO/WARNING line when the signature says so, or otherwise to be skipped."""
    position = window.text_start_of(start_line)
    while (match := regex.search(window.text, position)) is not None:
        index = window.line_index_at(match.start())
        line = window.lines[index]
        informational = not_on_info_lines and (split_line(line).level in _INFO_LEVELS or _NCCL_INFO in line)
        if index not in skip and not informational and not library.is_benign(line):
            return index
        position = window.text_start_of(index + 1)
    return None


def signature_evidence(
    window: LogWindow,
    library: SignatureLibrary,
    engine: str | None,
    start_line: int,
    skip: set[int],
    root: ErrorEvent | None,
) -> list[Evidence]:
    """The best match per class among the library's signatures, from ``start_line`` on."""
    best: dict[str, tuple[Signature, int, int]] = {}  # class -> (signature, line, supporters)
    for signature in library.signatures:
        if not signature.applies_to(engine):
            continue
        first = max(start_line, len(window.lines) - LAST_LINES) if signature.only_if_last else start_line
        indexes = [
            index
            for regex in signature.regexes
            if (index := _first_match(regex, window, skip, library, first, signature.not_on_info_lines)) is not None
        ]
        if not indexes:
            continue
        index = min(indexes)
        if signature.yields_to_kernel_build and (
            _first_notice_during_build(signature, window, index) or _start_up_went_on(signature, window, library)
        ):
            continue
        current = best.get(signature.diagnosis_class)
        if current is None:
            best[signature.diagnosis_class] = (signature, index, 1)
        elif (signature.priority, -index) > (current[0].priority, -current[1]):
            best[signature.diagnosis_class] = (signature, index, current[2] + 1)
        else:
            best[signature.diagnosis_class] = (current[0], current[1], current[2] + 1)
    found = []
    for signature, index, supporters in best.values():
        line = root.index if signature.prefer_exception_line and root is not None else index
        found.append(
            Evidence(
                "signature",
                signature.diagnosis_class,
                signature.priority,
                signature.confidence + 0.02 * (supporters - 1),
                line,
                f"signature {signature.id} matches line {index + 1} of the window",
                list(signature.remedies),
                signature.summary,
                signature.id,
            )
        )
    return found


def _first_notice_during_build(signature: Signature, window: LogWindow, index: int) -> bool:
    """A compiler (a just-in-time kernel build) ran just before the notice at ``index``, and the notice is the only
    one, or nothing but such notices followed it for no longer than a first build takes (the build goes on)."""
    before = window.lines[max(0, index - BUILD_LOOKBACK_LINES) : index]
    if not any(KERNEL_BUILD_LINE.search(line) for line in before):
        return False
    again = window.text_start_of(index + 1)
    if not any(regex.search(window.text, again) for regex in signature.regexes):
        return True
    after = [line for line in window.lines[index:] if line.strip()]
    if not all(any(regex.search(line) for regex in signature.regexes) for line in after):
        return False
    waited = sum(int(seconds) for line in after for seconds in _NOTICE_SECONDS.findall(line)[:1])
    return waited <= BUILD_PATIENCE_SECONDS


def _start_up_went_on(signature: Signature, window: LogWindow, library: SignatureLibrary) -> bool:
    """A start-up milestone follows the last of these notices: the slow work they waited for finished (the API
    server's own reports are no milestone of the engine's)."""
    last_notice = max(
        (window.line_index_at(match.start()) for regex in signature.regexes if (match := last_match(window, regex))),
        default=None,
    )
    milestone = last_phase(window, library).index
    if milestone is not None and SELF_REPORT.search(window.lines[milestone]):
        return False
    return last_notice is not None and milestone is not None and milestone > last_notice


def stack_evidence(events: LogEvents, start_line: int, library: SignatureLibrary) -> list[Evidence]:
    """What the stacks of a hang say: a thread stuck in speculative decoding or in a collective."""
    for event in events.events:
        if event.kind != "stack_dump" or event.idle or event.first_index < start_line:
            continue
        component = failing_component(event.frames)
        if component in STACK_HANG_PRIORITY:
            diagnosis_class: DiagnosisClass = "spec_decode_problem" if component == "speculative" else "nccl_hang"
            return [
                Evidence(
                    "stack",
                    diagnosis_class,
                    STACK_HANG_PRIORITY[component],
                    0.65,
                    event.index,
                    f"a stuck thread's stack is in {component}",
                    list(library.class_remedies.get(diagnosis_class, [])),
                )
            ]
    return []


def phase_evidence(phase: Phase, failure_index: int | None, library: SignatureLibrary) -> list[Evidence]:
    """A failure during a start-up phase points (weakly) at what that phase does."""
    mapped = _PHASE_CLASS.get(phase)
    if mapped is None or failure_index is None:
        return []
    return [
        Evidence(
            "phase",
            mapped[0],
            PHASE_PRIORITY[phase],
            mapped[1],
            failure_index,
            f"the failure came while start-up was in the {phase} phase",
            list(library.class_remedies.get(mapped[0], [])),
        )
    ]


def drafter_load_evidence(found: list[Evidence], library: SignatureLibrary) -> list[Evidence]:
    """A model that failed to load while the drafter was loading is the drafter: its checkpoint or its
    architecture, not the target's, is what the engine refused (speculative decoding's problem)."""
    loads = [item for item in found if item.diagnosis_class == "model_load_error"]
    if not loads:
        return []
    strongest = max(loads, key=lambda item: (item.priority, item.confidence))
    return [
        Evidence(
            "phase",
            "spec_decode_problem",
            strongest.priority + 1,
            strongest.confidence,
            strongest.index,
            f"a model failed to load while the drafter was loading ({strongest.why})",
            list(library.class_remedies.get("spec_decode_problem", [])),
            "The drafter model could not be loaded.",
        )
    ]


# Deaths by a signal, from the exit status: (exit codes, priority, raw confidence, why, extra remedies, summary).
_SIGNAL_DEATHS: tuple[tuple[tuple[int, ...], int, float, str, tuple[str, ...], str], ...] = (
    (
        KILLED_EXIT_CODES,
        28,
        0.7,
        "the process exited with {code} (SIGKILL)",
        (),
        "The process was killed with SIGKILL.",
    ),
    (
        SIGNAL_EXIT_CODES,
        27,
        0.6,
        "the process died from a signal (exit {code})",
        ("inspect_traceback",),
        "The process died from a signal (abort or segfault).",
    ),
    (
        HANGUP_EXIT_CODES,
        27,
        0.6,
        "the process was ended by SIGHUP (exit {code}): the terminal or session that started it closed",
        (),
        "The process was ended by a hang-up signal (its terminal or session closed).",
    ),
    (
        SENT_SIGNAL_EXIT_CODES,
        27,
        0.6,
        "the process was ended by a signal another process sent (exit {code}), which it does not handle",
        (),
        "The process was ended by a signal sent from outside (quit, user-defined or alarm) that it does not handle.",
    ),
)


def exit_evidence(exit_code: int | None, index: int | None, library: SignatureLibrary) -> list[Evidence]:
    """A process that died from a signal was killed from outside, or crashed outside Python."""
    for codes, priority, confidence, why, extra, summary in _SIGNAL_DEATHS:
        if exit_code in codes:
            remedies = [*extra, *library.class_remedies["process_killed"]]
            reason = why.format(code=exit_code)
            return [Evidence("exit", "process_killed", priority, confidence, index, reason, remedies, summary)]
    return []


def root_cause(events: LogEvents, start_line: int, lines: list[str]) -> ErrorEvent | None:
    """The first real error at or after ``start_line``: an exception or a crash (not an echo of one, nor one its
    process survived while a later error ended the run; ``lines`` are the window's), else the traceback fragment
    that carries an error message or whose frames name a component (a log cut before its exception line)."""
    candidates = [event for event in events.real() if event.first_index >= start_line and not _bystander(event)]
    failures = [event for event in candidates if event.kind in ("exception", "crash")]
    for position, event in enumerate(failures):
        later = failures[position + 1] if position + 1 < len(failures) else None
        if later is None or not _survived(event, lines, later.first_index):
            return event
    fragments = [event for event in candidates if event.kind == "truncated"]
    named = [event for event in fragments if event.message or failing_component(event.frames) is not None]
    if named:
        return named[0]
    return fragments[-1] if fragments else None


def _bystander(event: ErrorEvent) -> bool:
    """An error of Python's multiprocessing resource tracker, raised in its own process while it cleans up after
    processes that failed (a shared-memory segment it cannot find): never the failure itself."""
    return bool(event.frames) and all(
        frame.path.endswith("multiprocessing/resource_tracker.py") for frame in event.frames
    )


def _survived(event: ErrorEvent, lines: list[str], before: int) -> bool:
    """The process that logged ``event`` went on with its work: it wrote informational lines, other than about
    stopping, after the exception and before the next error (an error the engine logs and carries on from, such
    as a cache it cannot save)."""
    if event.kind != "exception" or event.origin is None:
        return False
    for line in lines[event.index + 1 : min(before, event.index + 1 + SURVIVAL_LOOKAHEAD_LINES)]:
        parts = split_line(line)
        if parts.origin == event.origin and parts.level == "INFO" and not _STOPPING.search(parts.text):
            return True
    return False
