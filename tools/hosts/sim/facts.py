"""What a simulated host (or simulated node) reports and sets: GPU facts from the scenario and the memory ledger
the stand-ins keep under its root, and the environment its commands see."""

from __future__ import annotations

import os
from pathlib import Path

import twin
from tools.hosts.base import GpuInfo, GpuLink, GpuProbe
from twin import hardware
from twin.layout import SimLayout
from twin.ledger import memory_in_use
from twin.scenario import GpuFault, Scenario

PROJECT_ROOT = Path(twin.__file__).resolve().parent.parent


def memory_used(scenario: Scenario, root: Path) -> list[int] | None:
    if scenario.host.gpu_count == 0:
        return None
    idle = scenario.host.idle_gpu_memory_mib
    return [idle + value for value in memory_in_use(root, scenario.host.gpu_count)]


def probe(scenario: Scenario, root: Path, active: list[GpuFault] | None = None) -> GpuProbe:
    """The GPUs as a probe sees them; ``active``: the faults in effect (default: those present from the start).
    A GPU that fell off the bus is missing from the list and from the topology, and NVML's error says so."""
    if scenario.host.gpu_count == 0:
        return GpuProbe(
            error="NVML: no NVIDIA GPU found (the simulated host has no GPUs)",
            driver_version=scenario.host.driver_version,
            cuda_version=scenario.host.cuda_version,
        )
    rows = hardware.gpu_rows(scenario, memory_used(scenario, root) or [], active)
    gpus = [GpuInfo(**vars(row)) for row in rows]
    present = {gpu.index for gpu in gpus}
    link, p2p = scenario.host.link(), scenario.host.p2p_supported
    topology = [
        GpuLink(gpu_a=a, gpu_b=b, link=link, p2p_supported=p2p)
        for a, b in hardware.pairs(scenario)
        if a in present and b in present
    ]
    lost = [f"NVML: {hardware.lost_gpu_error(fault)}" for fault in active or [] if fault.lost]
    return GpuProbe(
        gpus=gpus,
        topology=topology,
        interconnect=hardware.interconnect(scenario),
        driver_version=scenario.host.driver_version,
        cuda_version=scenario.host.cuda_version,
        error="; ".join(lost) or None,
    )


def environment(layout: SimLayout, scenario: Scenario, env: dict[str, str] | None, stand_in: bool) -> dict[str, str]:
    """The simulated host's own variables, the caller's, and for stand-ins the path to this package."""
    merged = {**layout.host_environment(scenario), **(env or {})}
    if stand_in:
        current = merged.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        merged["PYTHONPATH"] = os.pathsep.join(part for part in (str(PROJECT_ROOT), current) if part)
    return merged
