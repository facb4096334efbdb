"""Looking past the engine log: after a failed launch the log does not explain, the hardware is probed again
and the kernel log read. Hardware evidence outranks software remedies: a GPU missing from the fresh probe,
Xid or ECC errors on a GPU, a GPU that fell off the bus, or the kernel's OOM killer ending the engine
turn into a question for a person, not into another NCCL setting.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from agent.policies.runbook.progress import Attempt, RunbookProgress
from agent.state import ProjectState
from tools.kernel_log import HARDWARE_XIDS, KernelEvent, ReadKernelLogOutput

# Classes whose cause may lie outside the engine: a GPU that failed mid-run shows up as one of these.
UNEXPLAINED = {"nccl_error", "nccl_hang", "process_killed", "unknown", "gpu_hardware_fault"}
SIGKILL_EXITS = {-9, 137}


class HostEvidence(BaseModel):
    kind: str  # "hardware" or "host_memory"
    lines: list[str]
    summary: str


def needs_recheck(klass: str, exit_code: int | None) -> bool:
    return klass in UNEXPLAINED or exit_code in SIGKILL_EXITS


def _xid_code(text: str) -> int | None:
    match = re.search(r"Xid (\d+)", text)
    return int(match.group(1)) if match else None


def _gpu_lines(state: ProjectState, progress: RunbookProgress) -> list[str]:
    environment = state.environment
    lines = []
    if progress.gpu_count and len(environment.gpus) < progress.gpu_count:
        lines.append(f"a fresh probe finds {len(environment.gpus)} of the {progress.gpu_count} GPUs the plan used")
    if environment.gpu_probe_error and progress.gpu_count:  # on a host planned without GPUs there is none to lose
        lines.append(f"probe: {environment.gpu_probe_error}")
    for gpu in environment.gpus:
        hardware = [xid for xid in gpu.xid_errors if _xid_code(xid) in HARDWARE_XIDS]
        if hardware or (gpu.ecc_errors_uncorrected or 0) > 0:
            detail = ", ".join(hardware) or "no Xid"
            lines.append(f"GPU {gpu.index} {gpu.name}: {detail}, uncorrected ECC {gpu.ecc_errors_uncorrected or 0}")
    return lines


def _kernel_line(event: KernelEvent) -> str:
    if event.xid is None:
        return f"kernel: {event.line}"
    return f"kernel: Xid {event.xid} on the GPU at PCI {event.pci}: {event.line}"


def host_evidence(
    state: ProjectState, progress: RunbookProgress, attempt: Attempt, kernel: ReadKernelLogOutput | None
) -> HostEvidence | None:
    """What the probe and the kernel log say about the failed attempt; None when they show nothing."""
    events = kernel.events if kernel is not None else []
    gpu_lines = _gpu_lines(state, progress)
    gpu_lines += [_kernel_line(event) for event in events if event.kind in ("gpu_lost", "gpu_hardware")]
    if gpu_lines:
        return HostEvidence(kind="hardware", lines=gpu_lines, summary="a GPU failed (see the probe and the kernel log)")
    kills = [f"kernel: {event.line}" for event in events if event.kind == "oom_kill"]
    if kills and (attempt.diagnosis == "process_killed" or attempt.outcome == "exited"):
        return HostEvidence(
            kind="host_memory", lines=kills, summary="the kernel's OOM killer ended the engine: host memory ran out"
        )
    return None


def hardware_question(evidence: HostEvidence, attempt: Attempt) -> tuple[str, str]:
    """(question, hypothesis) for the evidence."""
    if evidence.kind == "host_memory":
        return (
            f"The engine of attempt {attempt.number} was killed by the kernel's OOM killer while it started (host "
            "memory ran out; its own log just stops). No engine flag of mine reliably lowers host memory during "
            "the load. Can the host get more free RAM (or swap), or should I stop?",
            "the load needs more host memory than is free",
        )
    return (
        f"Attempt {attempt.number} failed ({attempt.diagnosis}), and the host shows a hardware fault: a GPU "
        "reports errors or is gone. Software remedies cannot fix that, so I have not tried any. Please check "
        "the GPU (nvidia-smi -q, the kernel log; it may need a reset, a reboot or replacement) and tell me how "
        "to go on, or stop.",
        "a failing GPU; the engine's own error is a symptom of it",
    )
