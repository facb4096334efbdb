"""The class of a log without failure evidence, from how far the engine got and how the process ended.

- an exited process is never ``healthy`` (nor ``loading``): ``unknown`` with the finding
  ``died_after_ready`` or ``exited_during_start_up`` (a SIGKILL exit is decided as evidence earlier);
- a ready line, or batches and answered requests, make it ``healthy``;
- silent for ``stale_after_seconds`` right after NCCL initialisation: ``nccl_hang``;
- otherwise ``loading`` (the last milestone says how far it got).
"""

from __future__ import annotations

import re

from tools.logs.calibration import Calibration
from tools.logs.decide import Decision
from tools.logs.library import DiagnosisClass, SignatureLibrary
from tools.logs.models import DiagnosisHints
from tools.logs.phase import last_phase
from tools.logs.signals import last_progress, nccl_init_tail
from tools.logs.window import LogWindow

_ERROR_LEVEL = re.compile(r"\bERROR\b|\bCRITICAL\b")


def _decision(
    calibration: Calibration,
    diagnosis_class: DiagnosisClass,
    raw: float,
    index: int | None,
    summary: str,
    remedies: list[str],
    library: SignatureLibrary,
) -> Decision:
    known = remedies if remedies else list(library.class_remedies.get(diagnosis_class, []))
    why = summary.rstrip(".")
    return Decision(diagnosis_class, raw, calibration.calibrate(raw), index, summary, why[:1].lower() + why[1:], known)


def no_failure_decision(
    window: LogWindow,
    library: SignatureLibrary,
    hints: DiagnosisHints,
    ready: int | None,
    age: float | None,
    calibration: Calibration,
) -> Decision:
    last = len(window.lines) - 1
    phase = last_phase(window, library)
    if hints.exit_code is not None or hints.process_alive is False:
        code = "" if hints.exit_code is None else f" with code {hints.exit_code}"
        if ready is not None:
            decision = _decision(
                calibration,
                "unknown",
                0.4,
                last,
                f"The engine was ready and then exited{code} without a recognised cause.",
                ["inspect_traceback"],
                library,
            )
            decision.findings.append("died_after_ready")
            return decision
        decision = _decision(
            calibration,
            "unknown",
            0.3,
            last,
            f"The process exited{code} during start-up without a recognised cause.",
            ["inspect_traceback"],
            library,
        )
        decision.findings.append("exited_during_start_up")
        return decision
    if ready is not None:
        return _decision(
            calibration, "healthy", 0.9, ready, "The engine reported ready; no failure followed.", [], library
        )
    if phase.phase == "serving":
        return _decision(
            calibration, "healthy", 0.8, phase.index, "The engine is serving requests; no failure seen.", [], library
        )
    progress = last_progress(window, library)
    stale = age is not None and age >= hints.stale_after_seconds
    nccl_line = nccl_init_tail(window, progress) if stale else None
    if nccl_line is not None:
        return _decision(
            calibration,
            "nccl_hang",
            0.6,
            nccl_line,
            f"No output for {age:.0f} s right after distributed/NCCL initialisation: collective set-up "
            "is probably stuck.",
            ["nccl_p2p_disable", "nccl_debug_info", "enable_p2p_check"],
            library,
        )
    if progress is not None or phase.index is not None:
        index = max(progress[0] if progress else -1, phase.index if phase.index is not None else -1)
        stage = progress[2] if progress is not None and progress[0] == index else phase.phase.replace("_", " ")
        quiet = f" No output for {age:.0f} s; check CPU/IO/GPU counters." if stale else ""
        return _decision(
            calibration,
            "loading",
            0.4 if stale else 0.7,
            index,
            f"Still starting: {stage}.{quiet}",
            ["keep_waiting"],
            library,
        )
    errors = [
        index for index, line in enumerate(window.lines) if _ERROR_LEVEL.search(line) and not library.is_benign(line)
    ]
    if errors:
        return _decision(
            calibration,
            "unknown",
            0.3,
            errors[-1],
            "Errors were logged; none matches a known cause.",
            ["inspect_traceback"],
            library,
        )
    return _decision(
        calibration,
        "loading",
        0.5,
        last,
        "The engine is starting; no loading milestone yet.",
        ["keep_waiting"],
        library,
    )
