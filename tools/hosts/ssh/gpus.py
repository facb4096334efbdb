"""GPU facts of a remote host from ``nvidia-smi`` (the driver's own tool, present wherever the driver is): the GPU
table from ``--query-gpu`` in CSV, the driver's CUDA version from the plain header, the pair topology from
``topo -m``. NVML through the remote Python would need the NVML binding installed there; ``nvidia-smi`` does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tools.hosts.base import CommandResult, GpuInfo, GpuLink, GpuProbe, Interconnect

QUERY = (
    "index,name,compute_cap,memory.total,memory.used,utilization.gpu,temperature.gpu,"
    "ecc.errors.uncorrected.volatile.total,driver_version"
)
GPU_TABLE = ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]
MEMORY_USED = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
TOPOLOGY = ["nvidia-smi", "topo", "-m"]
HEADER = ["nvidia-smi"]
_CUDA = re.compile(r"CUDA Version:\s*([0-9.]+)")
Runner = Callable[[list[str]], CommandResult]


def _number(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_table(text: str) -> tuple[list[GpuInfo], str | None]:
    gpus: list[GpuInfo] = []
    driver = None
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < 9 or not cells[0].isdigit():
            continue
        capability = cells[2] if re.fullmatch(r"\d+\.\d+", cells[2]) else ""
        gpus.append(
            GpuInfo(
                index=int(cells[0]),
                name=cells[1],
                compute_capability=capability,
                memory_total_mib=_number(cells[3]) or 0,
                memory_used_mib=_number(cells[4]) or 0,
                utilization_percent=_number(cells[5]),
                temperature_c=_number(cells[6]),
                ecc_errors_uncorrected=_number(cells[7]),
            )
        )
        driver = cells[8] or driver
    return gpus, driver


def parse_topology(text: str, count: int) -> list[GpuLink]:
    """Links between GPU pairs from the ``topo -m`` matrix (NV#, PIX, PXB, PHB, NODE, SYS)."""
    rows = {}
    for line in text.splitlines():
        cells = line.split()
        if cells and re.fullmatch(r"GPU\d+", cells[0]):
            rows[int(cells[0][3:])] = cells[1 : count + 1]
    links = []
    for first in range(count):
        for second in range(first + 1, count):
            cells = rows.get(first, [])
            word = cells[second] if second < len(cells) else "unknown"
            links.append(GpuLink(gpu_a=first, gpu_b=second, link=word))
    return links


def interconnect(links: list[GpuLink], count: int) -> Interconnect:
    if count == 0:
        return "none"
    if not links:
        return "unknown"
    return "nvlink" if all(link.link.startswith("NV") for link in links) else "pcie"


def probe(run: Runner) -> GpuProbe:
    """GPU facts through ``run`` (a command on the host); never raises for a missing driver."""
    table = run(GPU_TABLE)
    if table.exit_code != 0:
        detail = (table.stderr or table.stdout).strip().splitlines()[-1:] or [f"exit code {table.exit_code}"]
        return GpuProbe(error=f"no NVIDIA driver/GPU found: nvidia-smi: {detail[0]}")
    gpus, driver = parse_table(table.stdout)
    header = _CUDA.search(run(HEADER).stdout)
    links = parse_topology(run(TOPOLOGY).stdout, len(gpus)) if len(gpus) > 1 else []
    return GpuProbe(
        gpus=gpus,
        topology=links,
        interconnect=interconnect(links, len(gpus)) if len(gpus) > 1 else ("none" if not gpus else "unknown"),
        driver_version=driver,
        cuda_version=header.group(1) if header else None,
    )


def memory_used(run: Runner) -> list[int] | None:
    result = run(MEMORY_USED)
    if result.exit_code != 0:
        return None
    values = [_number(line.strip()) for line in result.stdout.splitlines() if line.strip()]
    return None if any(value is None for value in values) else [value for value in values if value is not None]
