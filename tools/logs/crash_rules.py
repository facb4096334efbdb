"""What a death says about the root cause: native crashes, kernel assertions, and processes that vanished.

- a death from a signal in native code (fault handler, signal report, crash banner) is ``process_killed``
  unless it crashed inside code that explains it (NCCL, speculative decoding's native code); an
  interpreter's own fatal check (``Fatal Python error: _PyObject_AssertFailed``) is none of the classes, and
  is said to be ``unknown`` with confidence (a bug to report, not a remedy to apply);
- a GPU kernel's own assertion (``device-side assert triggered``: an index out of range in a kernel) is a
  bug in what the kernel was given: a drafter whose token ids or sizes disagree with its target's where
  speculative decoding runs, otherwise ``unknown`` with confidence (never the GPU generation: the kernel ran);
- a worker's death reported just before the first error makes that error its consequence;
- a failure whose only report is an echo, or whose first error is a process finding its peer gone, is a
  process that died without an error of its own, unless the echo is vLLM's list of the engine-core processes that
  ended and none ended by a signal (its error was written elsewhere: ``unknown``).
"""

from __future__ import annotations

import re

from tools.logs.events import ErrorEvent, LogEvents
from tools.logs.evidence import Evidence
from tools.logs.library import DiagnosisClass, SignatureLibrary
from tools.logs.window import LogWindow

CRASH_PRIORITY = 62
DEATH_BEFORE_PRIORITY = 67  # above the root cause's component (65): the error is what the survivors hit
SPECULATIVE_ASSERTION_PRIORITY = 85  # as a drafter's shape mismatch
SILENT_DEATH_PRIORITY = 20  # above an unexplained error (10) and the engines' generic failure reports (12)
# A process that died from a signal in native code; an interpreter's own fatal check
# ("Fatal Python error: _PyObject_AssertFailed") is not one and stays unexplained.
_SIGNAL_DEATH = re.compile(
    r"Segmentation fault|Segfault|SIG(?:SEGV|BUS|ILL|FPE|ABRT)|Aborted|Bus error|Floating point exception"
    r"|Illegal instruction|Memory access fault"
)
# NCCL's own symbols in a native crash report (the program counter's function, the library): a crash inside
# NCCL is nccl_error even when no Python frame names the distributed code.
_NCCL_SYMBOL = re.compile(r"nccl|Proxy(?:Op|Service|Progress|Connect|State)\w*\(", re.IGNORECASE)
# Speculative decoding's own native code in a crash report (C++ namespaces such as sglang::ngram::).
_SPECULATIVE_SYMBOL = re.compile(r"\b(?:ngram|eagle\d?|speculative|spec_decode)::", re.IGNORECASE)
_CRASH_REPORT_LINES = 12
# A native backtrace printed just before the crash's banner (UCX's "==== backtrace (tid: N) ====", its numbered
# frames and closing rule; Python's fault handler reports after it): the crash's own stack.
_BACKTRACE_LINE = re.compile(r"^\s*\d+\s+0x[0-9a-f]+ |^=+(?: backtrace \(tid: *\d+\) =+)?$")
# A kernel's assertion as the runtime reports it to the host (CUDA and HIP word it alike).
_KERNEL_ASSERTION = re.compile(r"device-side assert(?:ion)? triggered")
# A worker's death reported just before the root cause (the library's "engine-core-died" wording): the error is
# what the survivors hit when it vanished.
_DEATH_LOOKBACK_LINES = 12
# What a process raises when the process it talks to is gone (a closed pipe or socket): a consequence.
_PEER_GONE = re.compile(r"BrokenPipeError|EOFError|ConnectionResetError|ConnectionAbortedError|ZMQError")
# vLLM's report of the engine-core processes that ended during start-up, with their exit codes: none that a signal
# ended (a negative code) means no process was killed; the one that failed wrote its error elsewhere.
_EXITED_ON_ITS_OWN = re.compile(r"Failed core proc\(s\): \{(?:'[\w-]+': \d+(?:, )?)*\}")


def _evidence(
    library: SignatureLibrary, diagnosis_class: DiagnosisClass, priority: int, confidence: float, index: int, why: str
) -> Evidence:
    remedies = list(library.class_remedies.get(diagnosis_class, []))
    return Evidence("component", diagnosis_class, priority, confidence, index, why, remedies)


def _crashed_in(symbol: re.Pattern[str], root: ErrorEvent, window: LogWindow) -> bool:
    """The crash report (its stack, the lines right after its banner and a native backtrace printed right before
    it) names the code ``symbol`` matches."""
    if any(symbol.search(f"{frame.path} {frame.function}") for frame in root.frames):
        return True
    report = window.lines[root.index : root.index + _CRASH_REPORT_LINES]
    start = root.first_index
    while start > 0 and _BACKTRACE_LINE.search(window.lines[start - 1].strip()):
        start -= 1
    return any(symbol.search(line) for line in report + window.lines[start : root.first_index])


def crash_evidence(
    root: ErrorEvent, window: LogWindow, library: SignatureLibrary, component: str | None
) -> list[Evidence]:
    """The class of a native crash that no component of its Python stack explains."""
    if _crashed_in(_NCCL_SYMBOL, root, window):
        why = "the process crashed in native code inside NCCL"
        return [_evidence(library, "nccl_error", CRASH_PRIORITY + 1, 0.7, root.index, why)]
    if _crashed_in(_SPECULATIVE_SYMBOL, root, window):
        why = "the process crashed in speculative decoding's native code"
        return [_evidence(library, "spec_decode_problem", CRASH_PRIORITY + 1, 0.7, root.index, why)]
    if _SIGNAL_DEATH.search(f"{root.type} {root.message}"):
        where = f" in {component} code" if component else ""
        why = f"the process crashed in native code{where} ({root.message})"
        return [_evidence(library, "process_killed", CRASH_PRIORITY, 0.7, root.index, why)]
    if root.type == "Fatal Python error":
        # Known to be none of the classes: said with confidence, so that no weaker source names one.
        why = f"the interpreter's own check failed, not a death by a signal ({root.message})"
        return [_evidence(library, "unknown", CRASH_PRIORITY, 0.6, root.index, why)]
    return []


def kernel_assertion_evidence(root: ErrorEvent, library: SignatureLibrary, speculative: bool) -> list[Evidence]:
    """A GPU kernel's assertion failed: what it was given is wrong (see the module's docstring)."""
    if not _KERNEL_ASSERTION.search(root.message):
        return []
    if speculative:
        why = "a GPU kernel's assertion failed while speculative decoding runs (draft and target indices disagree)"
        return [_evidence(library, "spec_decode_problem", SPECULATIVE_ASSERTION_PRIORITY, 0.65, root.index, why)]
    why = "a GPU kernel's own assertion failed (an index out of range): a bug in what it was given, not a setting"
    return [_evidence(library, "unknown", CRASH_PRIORITY, 0.6, root.index, why)]


def death_before_evidence(root: ErrorEvent, window: LogWindow, library: SignatureLibrary) -> list[Evidence]:
    """A process's death reported right before the root cause's first line: the root cause is its consequence."""
    if root.kind == "crash":
        return []
    notices = [
        regex for signature in library.signatures if signature.id == "engine-core-died" for regex in signature.regexes
    ]
    for index in range(root.first_index - 1, max(root.first_index - _DEATH_LOOKBACK_LINES, 0) - 1, -1):
        if any(notice.search(window.lines[index]) for notice in notices):
            why = "a worker died just before the first error, which is the death's consequence"
            return [_evidence(library, "process_killed", DEATH_BEFORE_PRIORITY, 0.7, index, why)]
    return []


def silent_death_evidence(events: LogEvents, root: ErrorEvent | None, library: SignatureLibrary) -> list[Evidence]:
    """Where nothing else explains a failure: its report points to a root cause that no process wrote (only echoes
    such as "see root cause above"), or its first error is a process finding its peer gone (a broken pipe, a closed
    socket). A process then died without a Python error of its own, as when it is killed from outside (a signal,
    the OOM killer)."""
    if root is not None:
        if root.type is None or not _PEER_GONE.search(root.type):
            return []
        index, why = root.index, f"the first error is a process finding its peer gone ({root.type}): that peer died"
    else:
        echo = next((event for event in events.events if event.echo), None)
        if echo is None:
            return []
        if _EXITED_ON_ITS_OWN.search(echo.message):
            why = "the engine core ended on its own (no signal among its exit codes): its error is elsewhere"
            remedies = ["inspect_traceback"]
            return [Evidence("silent_death", "unknown", SILENT_DEATH_PRIORITY, 0.5, echo.index, why, remedies)]
        index, why = echo.index, "the failure points to a root cause that no process in the log wrote"
    why += " without an error of its own"
    remedies = list(library.class_remedies.get("process_killed", []))
    return [Evidence("silent_death", "process_killed", SILENT_DEATH_PRIORITY, 0.55, index, why, remedies)]
