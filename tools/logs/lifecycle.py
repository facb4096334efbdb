"""The class of a log without failure evidence, from how far the engine got and how the process ended.

- an orderly shutdown of the HTTP server after the ready line (the library's shutdown lines) with no failure
  before it is ``stopped``, whether or not the caller knows the process ended; so is a shutdown that follows
  the engine's report of an interrupt or termination signal (Ctrl+C, SIGTERM) before it was ready;
- an exited process is never ``healthy`` (nor ``loading``): ``unknown`` with the finding
  ``died_after_ready`` or ``exited_during_start_up`` (a SIGKILL exit is decided as evidence earlier), except a
  job (a collective test, a benchmark, a test run) that reported its work finished and exited with code 0:
  ``healthy``, the work done;
- a ready line, or batches and answered requests, make it ``healthy``, unless the log has been silent for
  ``stale_after_seconds`` after statistics that showed requests running: ``nccl_hang`` (an engine with requests
  in flight logs every few seconds);
- an error-level line after the last start-up milestone outranks the milestones: ``unknown``, never
  ``loading`` (a failure printed without a traceback, e.g. a worker's one-line error);
- vLLM's engine core ending on a termination signal while the server goes on taking requests and starts no
  shutdown: ``process_killed`` (the core alone was signalled, from outside);
- silent for ``stale_after_seconds`` with distributed (NCCL) initialisation as the last milestone:
  ``nccl_hang``; with several ranks and the weights loaded or memory being profiled (steps whose ranks
  synchronise through collectives) also ``nccl_hang``; with CUDA graph capture as the last milestone:
  ``cuda_graph_capture_failure``, unless kernels are being built just in time for it (the first capture
  then takes many minutes): ``loading``, or several nodes take part (the capture waits on collectives
  between nodes): ``nccl_hang``;
- silent for ``stale_after_seconds`` when the last thing the log shows is collective communication (NCCL's
  own lines, a process group being set up, a collective called) after the engine's last milestone:
  ``nccl_hang``;
- otherwise ``loading`` (the last milestone says how far it got).
"""

from __future__ import annotations

import re

from tools.logs.calibration import Calibration
from tools.logs.decide import Decision
from tools.logs.endings import engine_core_signalled_alone, orderly_shutdown
from tools.logs.frames import parse_frame
from tools.logs.library import DiagnosisClass, SignatureLibrary
from tools.logs.models import Alternative, DiagnosisHints
from tools.logs.phase import last_phase
from tools.logs.root_rules import phase_lead
from tools.logs.signals import KERNEL_BUILD_LINE, last_progress
from tools.logs.window import LogWindow

# Several ranks take part: a parallel size above 1 in the configuration dump, or a rank above 0 speaking.
_SEVERAL_RANKS = re.compile(
    r"(?:tensor_parallel_size|tp_size|pipeline_parallel_size|pp_size|world_size)['\"]?[=:] ?(?:[2-9]|[1-9]\d)"
    r"|nranks (?:[2-9]|[1-9]\d)|world size (?:[2-9]|[1-9]\d)"
    r"|\(RayWorkerWrapper pid=|\(VllmWorkerProcess pid=|Worker_TP[1-9]"
    r"|\bTP[1-9]\d*\b|\brank[= ][1-9]\d*\b|\bRANK [1-9]|\bDP[1-9]\d* TP\d"
)
# Python's multiprocessing resource tracker, left behind when the processes it served end without cleaning up.
_EXIT_CLEANUP = re.compile(r"resource_tracker: There appear to be \d+ leaked")
_CLEANUP_LINES = 4
_SEVERAL_NODES = re.compile(
    r"nnodes['\"]?[=:] ?(?:[2-9]|[1-9]\d)|--nnodes[= ](?:[2-9]|[1-9]\d)|node_rank['\"]?[=:] ?[1-9]|NNODES=[2-9]"
)
# Collective communication in progress: NCCL's own lines, a process group being set up, a collective called.
_COLLECTIVE_TALK = re.compile(
    r"NCCL INFO|'backend': 'nccl'|backend=nccl|init_process_group|all_to_all|all_reduce|allreduce|all_gather"
    r"|reduce_scatter|barrier\(|[Ii]nitiali[sz]\w* (?:the )?process group|distributed/launch|torchrun|MASTER_ADDR"
)
# NCCL's own functions (ncclProxyService, ncclAllReduce) in a stack frame: NCCL starts its threads only for a
# communicator already created, so a silent process showing them waits in or after collective communication.
_NCCL_FUNCTION = re.compile(r"^nccl[A-Z]")
_COLLECTIVE_PHASES = ("weights_done", "memory_profiling")
# NCCL logging a collective it runs (NCCL_DEBUG=INFO, "NCCL INFO AllReduce: opCount 16 ..."): the work of a job
# whose only output is its collectives; silence after it is a collective that does not complete.
_COLLECTIVE_OP = re.compile(r"NCCL INFO \w+: opCount [0-9a-f]+")
# An engine's periodic statistics with requests in flight (vLLM's "Running: 50 reqs", SGLang's "#running-req: 3"):
# while requests run, the engine logs them every few seconds, so long silence after one is an engine that stopped.
_REQUESTS_IN_FLIGHT = re.compile(r"Running: [1-9]\d* reqs|#running-req: [1-9]\d*")
# A job that is not a server saying its work finished: nccl-tests' closing lines, a serving benchmark's result block,
# a test or benchmark run that completed.
_JOB_FINISHED = re.compile(
    r"Collective test concluded|Out of bounds values : 0 OK|Avg bus bandwidth +: [\d.]+|Serving Benchmark Result"
    r"|(?i:\b(?:run|job|benchmark|tests?)s? completed successfully\b|\ball tests passed\b)"
)
_ERROR_LEVEL = re.compile(r"\bERROR\b|\bCRITICAL\b|\[E [\w.]+:\d+\]")
# A logger named after a redirected stream tags each of its lines with one level (FastChat's "| ERROR | stderr |"):
# the tag says where the line came from, not that it is an error.
_STREAM_TAG = re.compile(r"\| [A-Z]+ \| std(?:err|out) \|")


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
    shutdown = orderly_shutdown(window, library, ready)
    if shutdown is not None:
        code = "" if hints.exit_code is None else f" (exit code {hints.exit_code})"
        how = (
            f"The engine was ready and then shut down in order{code}, as on a stop request"
            if ready is not None
            else f"A stop ended the run{code}: an operator's interrupt or termination signal, or an orderly shutdown"
        )
        return _decision(calibration, "stopped", 0.85, shutdown, f"{how}; no failure came first.", [], library)
    signalled = engine_core_signalled_alone(window)
    if signalled is not None:
        return _decision(
            calibration,
            "process_killed",
            0.55,
            signalled,
            "The engine core ended on a termination signal while the server went on taking requests and started no "
            "shutdown: the core alone was signalled, from outside (an orchestrator, a watchdog).",
            [],
            library,
        )
    # Before ready an operator's interrupt already counted as a stop above; what is left ended on its own.
    vanished = _vanished(window) if ready is None and hints.exit_code is None else None
    if vanished is not None:
        return _decision(
            calibration,
            "process_killed",
            0.55,
            vanished,
            f"The process ended during start-up ({phase.phase.replace('_', ' ')}) without a traceback or an error: "
            "only the interpreter's exit-time cleanup warning follows, as when the OS kills a process (out of host "
            "memory).",
            [],
            library,
        )
    finished = _job_finished(window) if hints.exit_code == 0 else None
    if finished is not None:
        return _decision(
            calibration,
            "healthy",
            0.75,
            finished,
            "The job reported its work finished and exited with code 0; no failure came first.",
            [],
            library,
        )
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
    stale = age is not None and age >= hints.stale_after_seconds
    # Only for a job whose work is its collectives: an engine that said it was ready is idle when silent.
    if (
        phase.phase == "serving"
        and stale
        and phase.index is not None
        and _COLLECTIVE_OP.search(window.lines[phase.index])
        and (ready is None or _COLLECTIVE_OP.search(window.lines[ready]))
    ):
        return _decision(
            calibration,
            "nccl_hang",
            0.55,
            phase.index,
            f"No output for {age:.0f} s after a collective operation was the last work logged: the ranks probably "
            "wait in a collective (NCCL) that does not complete.",
            ["nccl_debug_info", "nccl_p2p_disable", "enable_p2p_check"],
            library,
        )
    if (
        phase.phase == "serving"
        and stale
        and phase.index is not None
        and (ready is None or ready <= phase.index)
        and _REQUESTS_IN_FLIGHT.search(window.lines[phase.index])
    ):
        return _decision(
            calibration,
            "nccl_hang",
            0.5,
            phase.index,
            f"No output for {age:.0f} s while the last statistics showed requests running: an engine with work "
            "logs every few seconds, so it has stopped making progress (a collective or a kernel that does not "
            "complete).",
            ["nccl_debug_info", "disable_custom_all_reduce", "disable_cuda_graph"],
            library,
        )
    if ready is not None:
        return _decision(
            calibration, "healthy", 0.9, ready, "The engine reported ready; no failure followed.", [], library
        )
    if phase.phase == "serving":
        return _decision(
            calibration, "healthy", 0.8, phase.index, "The engine is serving requests; no failure seen.", [], library
        )
    progress = last_progress(window, library)
    milestone = max(progress[0] if progress else -1, phase.index if phase.index is not None else -1)
    errors = _error_lines(window, library, milestone + 1)
    if errors and milestone >= 0:
        stage = phase.phase.replace("_", " ")
        decision = _decision(
            calibration,
            "unknown",
            0.3,
            errors[0],
            f"An error was logged after the last start-up milestone ({stage}); it matches no known cause.",
            ["inspect_traceback"],
            library,
        )
        lead = phase_lead(phase.phase)
        if lead is not None:
            decision.alternatives.append(
                Alternative(
                    diagnosis_class=lead[0],
                    confidence=calibration.calibrate(0.3),
                    why=lead[1],
                    line_number=window.numbers[errors[0]],
                )
            )
        return decision
    if stale and phase.phase == "distributed_init" and phase.index is not None and phase.index >= milestone:
        return _decision(
            calibration,
            "nccl_hang",
            0.6,
            phase.index,
            f"No output for {age:.0f} s right after distributed/NCCL initialisation: collective set-up "
            "is probably stuck.",
            ["nccl_p2p_disable", "nccl_debug_info", "enable_p2p_check"],
            library,
        )
    if stale and phase.phase in _COLLECTIVE_PHASES and phase.index is not None and _several_ranks(window):
        return _decision(
            calibration,
            "nccl_hang",
            0.55,
            phase.index,
            f"No output for {age:.0f} s with several ranks after the weights loaded ({phase.phase.replace('_', ' ')}): "
            "the ranks probably wait in a collective (NCCL) that does not complete.",
            ["nccl_p2p_disable", "disable_custom_all_reduce", "nccl_debug_info"],
            library,
        )
    if stale and phase.phase == "cuda_graph" and any(_SEVERAL_NODES.search(line) for line in window.lines):
        return _decision(
            calibration,
            "nccl_hang",
            0.55,
            phase.index,
            f"No output for {age:.0f} s while CUDA graphs are captured on several nodes: the capture's "
            "collectives between the nodes probably do not complete.",
            ["nccl_debug_info", "nccl_ib_disable", "disable_cuda_graph"],
            library,
        )
    if stale and phase.phase == "cuda_graph" and any(KERNEL_BUILD_LINE.search(line) for line in window.lines):
        return _decision(
            calibration,
            "loading",
            0.5,
            phase.index,
            f"No output for {age:.0f} s while CUDA graphs are captured, with kernels built just in time: the "
            "first capture compiles them and can take many minutes; check that a compiler is using the CPU.",
            ["keep_waiting"],
            library,
        )
    if stale and phase.phase == "cuda_graph" and phase.index is not None and phase.index >= milestone:
        return _decision(
            calibration,
            "cuda_graph_capture_failure",
            0.6,
            phase.index,
            f"No output for {age:.0f} s while CUDA graphs were being captured: the capture is probably stuck "
            "(an error inside a capture, e.g. in a custom all-reduce, can show only as a hang).",
            ["disable_cuda_graph", "disable_custom_all_reduce", "lower_cuda_graph_bs"],
            library,
        )
    talk = _last_collective_talk(window) if stale else None  # a scan of every line: only for a silent log
    if talk is not None and talk > milestone:
        return _decision(
            calibration,
            "nccl_hang",
            0.55,
            talk,
            f"No output for {age:.0f} s after collective communication was the last thing logged: the ranks "
            "probably wait in a collective (NCCL) that does not complete.",
            ["nccl_debug_info", "nccl_p2p_disable", "enable_p2p_check"],
            library,
        )
    if milestone >= 0:
        index = milestone
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
    if errors:
        return _decision(
            calibration,
            "unknown",
            0.3,
            errors[0],
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


def _vanished(window: LogWindow) -> int | None:
    """The line of the multiprocessing resource tracker's exit-time warning when it is among the log's last
    lines: the tracker prints it once the processes it served are gone, so the program ended there."""
    last = len(window.lines)
    return next(
        (index for index in range(max(last - _CLEANUP_LINES, 0), last) if _EXIT_CLEANUP.search(window.lines[index])),
        None,
    )


def _last_collective_talk(window: LogWindow) -> int | None:
    """Index of the last line showing collective communication, or None."""
    for index in range(len(window.lines) - 1, -1, -1):
        line = window.lines[index]
        if _COLLECTIVE_TALK.search(line):
            return index
        frame = parse_frame(line)[0]
        if frame is not None and _NCCL_FUNCTION.match(frame.function):
            return index
    return None


def _job_finished(window: LogWindow) -> int | None:
    """The last line of a job (not a server) that says its work finished, if any."""
    found = [index for index, line in enumerate(window.lines) if _JOB_FINISHED.search(line)]
    return found[-1] if found else None


def _several_ranks(window: LogWindow) -> bool:
    return any(_SEVERAL_RANKS.search(line) for line in window.lines)


def _error_lines(window: LogWindow, library: SignatureLibrary, start: int) -> list[int]:
    """Error-level lines (``ERROR``, ``CRITICAL``, c10's ``[E file:line]``) from line ``start`` on."""
    return [
        index
        for index in range(max(start, 0), len(window.lines))
        if _ERROR_LEVEL.search(_STREAM_TAG.sub("|", window.lines[index])) and not library.is_benign(window.lines[index])
    ]
