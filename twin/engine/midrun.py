"""What happens to a launch while it runs (scenario version 2): faults that strike mid-run, faults due by the
host's clock, and the host's OOM killer during the weight load.

Each becomes a :class:`Failure` at the moment it happens, carrying the fault it strikes (the probe and
``dmesg`` report it from then on) and the kernel's lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.engine.failure import Failure
from twin.engine.physics import fault_lines
from twin.hardware import fault_kernel_lines
from twin.scenario import GpuFault, Scenario

GIB_KB = 1024 * 1024


@dataclass
class TimedFailure:
    """A failure due when the host's clock reaches ``host_seconds``, whatever the engine does then."""

    host_seconds: float
    failure: Failure


def _failure(index: int, fault: GpuFault, used: list[int]) -> Failure:
    lines = list(fault.engine_log) or fault_lines(bool(fault.ecc_uncorrected), used.index(fault.gpu), fault.gpu)
    return Failure(
        fault.engine_effect,
        fault.at,
        lines,
        exit_code=fault.exit_code,
        progress=fault.progress,
        after_seconds=fault.after_seconds,
        source=f"GPU {fault.gpu} fault during the run",
        fault=index,
        kernel_lines=fault_kernel_lines(fault),
    )


def launch_faults(
    scenario: Scenario, attempt: int, used: list[int], struck: set[int]
) -> tuple[list[Failure], list[int]]:
    """Faults set to strike during this (the ``attempt``-th) engine start: failures for those on GPUs it
    uses, and the indexes of those on other GPUs, which strike as it starts."""
    failures, at_start = [], []
    for index, fault in enumerate(scenario.host.faults):
        if fault.after_launch != attempt or index in struck:
            continue
        if fault.gpu in used:
            failures.append(_failure(index, fault, used))
        else:
            at_start.append(index)
    return failures, at_start


def clock_faults(scenario: Scenario, used: list[int], now: float) -> list[TimedFailure]:
    """Faults due by the host's clock later than ``now`` on GPUs this launch uses."""
    return [
        TimedFailure(fault.at_host_seconds, _failure(index, fault, used))
        for index, fault in enumerate(scenario.host.faults)
        if fault.at_host_seconds is not None and fault.at_host_seconds > now and fault.gpu in used
    ]


def oom_kill(scenario: Scenario) -> Failure | None:
    """The kernel's OOM killer, when the load needs more host memory than is free: it strikes at the point
    of the load where the memory runs out, with a SIGKILL and no line of the engine's own."""
    needed, host = scenario.engine.load.host_ram_gib, scenario.host
    free = host.ram_gib - host.ram_used_gib
    if needed <= 0 or needed <= free:
        return None
    return Failure(
        "killed",
        "load",
        [],
        exit_code=137,
        progress=max(0.02, min(0.98, free / needed)),
        source="host out of memory",
        kernel_lines=[
            "python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
            "Out of memory: Killed process {pid} (python3) total-vm:"
            f"{int(needed * 1.1 * GIB_KB)}kB, anon-rss:{int(free * GIB_KB)}kB, file-rss:0kB, shmem-rss:0kB, "
            "UID:0 pgtables:412680kB oom_score_adj:0",
        ],
    )
