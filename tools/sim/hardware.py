"""GPU facts of a scenario in the shapes the probe and ``nvidia-smi`` report them."""

from __future__ import annotations

import hashlib

from agent.state import GpuInfo, GpuLink
from tools.host.base import GpuProbe
from tools.sim.scenario import Scenario

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


def gpu_infos(scenario: Scenario, used_mib: list[int]) -> list[GpuInfo]:
    faults = {fault.gpu: fault for fault in scenario.host.faults}
    infos = []
    for index in range(scenario.host.gpu_count):
        group = scenario.host.gpu_group(index)
        fault = faults.get(index)
        used = min(group.memory_mib, used_mib[index] if index < len(used_mib) else 0)
        infos.append(
            GpuInfo(
                index=index,
                name=group.name,
                compute_capability=group.compute_capability,
                memory_total_mib=group.memory_mib,
                memory_used_mib=used,
                utilization_percent=min(100, int(100 * used / group.memory_mib)) if used > 1024 else 0,
                temperature_c=34 + (index * 3) % 9 + (20 if used > 1024 else 0),
                ecc_errors_uncorrected=fault.ecc_uncorrected if fault else 0,
                xid_errors=[xid_text(code) for code in fault.xid] if fault else [],
            )
        )
    return infos


def topology(scenario: Scenario) -> list[GpuLink]:
    link = scenario.host.link()
    count = scenario.host.gpu_count
    return [
        GpuLink(gpu_a=a, gpu_b=b, link=link, p2p_supported=scenario.host.p2p_supported)
        for a in range(count)
        for b in range(a + 1, count)
    ]


def probe(scenario: Scenario, used_mib: list[int]) -> GpuProbe:
    host = scenario.host
    if host.gpu_count == 0:
        return GpuProbe(
            error="NVML: no NVIDIA GPU found (the simulated host has no GPUs)",
            driver_version=host.driver_version,
            cuda_version=host.cuda_version,
        )
    interconnect = "nvlink" if host.interconnect == "nvlink" else ("pcie" if host.gpu_count > 1 else "none")
    return GpuProbe(
        gpus=gpu_infos(scenario, used_mib),
        topology=topology(scenario),
        interconnect=interconnect,
        driver_version=host.driver_version,
        cuda_version=host.cuda_version,
    )
