"""GPU facts of a scenario, shared by the simulated host's probe and its ``nvidia-smi``.

Kept free of the agent's state models so the host-command stand-in starts quickly.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from twin.scenario import GpuFault, Scenario

# NVIDIA Xid catalogue (docs.nvidia.com/deploy/xid-errors): the codes a scenario is likely to use.
XID_DESCRIPTIONS = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "Preemptive cleanup, due to previous errors",
    48: "Double Bit ECC Error (DBE)",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper failure",
    74: "NVLink Error",
    79: "GPU has fallen off the bus",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
    119: "GSP RPC Timeout",
    120: "GSP Error",
}


def xid_text(code: int) -> str:
    return f"Xid {code}: {XID_DESCRIPTIONS.get(code, 'unknown Xid')}"


def pci_bus_id(index: int) -> str:
    return f"00000000:{(index * 0x20 + 0x01) % 256:02X}:00.0"


def gpu_uuid(scenario: Scenario, index: int) -> str:
    digest = hashlib.sha256(f"{scenario.name}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


@dataclass(frozen=True)
class GpuRow:
    """One GPU as the probe and ``nvidia-smi`` see it (field names follow ``agent.state.GpuInfo``)."""

    index: int
    name: str
    compute_capability: str
    memory_total_mib: int
    memory_used_mib: int
    utilization_percent: int
    temperature_c: int
    ecc_errors_uncorrected: int
    xid_errors: list[str] = field(default_factory=list)


def gpu_rows(scenario: Scenario, used_mib: list[int], active: list[GpuFault] | None = None) -> list[GpuRow]:
    """The GPUs a probe sees; ``active`` are the faults in effect (default: those present from the start).
    A GPU that fell off the bus (``lost``) is not listed."""
    if active is None:
        active = [fault for fault in scenario.host.faults if not fault.triggered]
    faults = {fault.gpu: fault for fault in active}
    lost = {fault.gpu for fault in active if fault.lost}
    rows = []
    for index in range(scenario.host.gpu_count):
        if index in lost:
            continue
        group = scenario.host.gpu_group(index)
        fault = faults.get(index)
        used = min(group.memory_mib, used_mib[index] if index < len(used_mib) else 0)
        busy = used > 1024
        rows.append(
            GpuRow(
                index=index,
                name=group.name,
                compute_capability=group.compute_capability,
                memory_total_mib=group.memory_mib,
                memory_used_mib=used,
                utilization_percent=min(100, int(100 * used / group.memory_mib)) if busy else 0,
                temperature_c=34 + (index * 3) % 9 + (20 if busy else 0),
                ecc_errors_uncorrected=fault.ecc_uncorrected if fault else 0,
                xid_errors=[xid_text(code) for code in fault.xid] if fault else [],
            )
        )
    return rows


def pairs(scenario: Scenario) -> list[tuple[int, int]]:
    count = scenario.host.gpu_count
    return [(a, b) for a in range(count) for b in range(a + 1, count)]


def interconnect(scenario: Scenario) -> str:
    host = scenario.host
    if host.interconnect == "nvlink":
        return "nvlink"
    return "pcie" if host.gpu_count > 1 else "none"


def lost_gpu_error(fault: GpuFault) -> str:
    """What NVML (and nvidia-smi) say about a GPU that fell off the bus."""
    return f"Unable to determine the device handle for GPU {pci_bus_id(fault.gpu)}: Unknown Error"


def fault_kernel_lines(fault: GpuFault) -> list[str]:
    """The kernel's report of a fault (NVRM Xid lines, then the scenario's own lines)."""
    bus = pci_bus_id(fault.gpu)[4:]
    lines = [
        f"NVRM: Xid (PCI:{bus}): {code}, pid=2817, name=python3, {XID_DESCRIPTIONS.get(code, 'unknown Xid')}"
        for code in fault.xid
    ]
    if fault.lost:
        lines.append(f"NVRM: GPU {pci_bus_id(fault.gpu)[4:]}: GPU has fallen off the bus.")
    return lines + list(fault.dmesg)
