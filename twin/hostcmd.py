"""Stand-ins for host commands on the simulated host: nvidia-smi, lscpu, nproc, free, df, dmesg, ss.

Usage (written by the command translation)::

    python -m twin.hostcmd --scenario F --sim-root D -- CMD ARGS

Output imitates the real tools closely enough for people and parsers; unknown options exit with 2.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from twin import hardware
from twin.hardware import GpuRow
from twin.host_state import HostState
from twin.ledger import memory_in_use
from twin.loader import ScenarioError, load_scenario
from twin.scenario import Scenario

QueryField = Callable[[GpuRow, Scenario], str]
QUERY_FIELDS: dict[str, QueryField] = {
    "index": lambda gpu, s: str(gpu.index),
    "name": lambda gpu, s: gpu.name,
    "memory.total": lambda gpu, s: f"{gpu.memory_total_mib} MiB",
    "memory.used": lambda gpu, s: f"{gpu.memory_used_mib} MiB",
    "memory.free": lambda gpu, s: f"{gpu.memory_total_mib - gpu.memory_used_mib} MiB",
    "utilization.gpu": lambda gpu, s: f"{gpu.utilization_percent or 0} %",
    "temperature.gpu": lambda gpu, s: str(gpu.temperature_c),
    "compute_cap": lambda gpu, s: gpu.compute_capability,
    "driver_version": lambda gpu, s: s.host.driver_version or "N/A",
    "pci.bus_id": lambda gpu, s: hardware.pci_bus_id(gpu.index),
    "uuid": lambda gpu, s: hardware.gpu_uuid(s, gpu.index),
    "ecc.errors.uncorrected.volatile.total": lambda gpu, s: str(gpu.ecc_errors_uncorrected or 0),
    "ecc.errors.uncorrected.aggregate.total": lambda gpu, s: str(gpu.ecc_errors_uncorrected or 0),
}


def _gpus(scenario: Scenario, sim_root: Path) -> list[GpuRow]:
    used = memory_in_use(sim_root, scenario.host.gpu_count)
    active = [fault for _, fault in HostState(sim_root, scenario).active_faults()]
    return hardware.gpu_rows(scenario, [value + scenario.host.idle_gpu_memory_mib for value in used], active)


def _lost(scenario: Scenario, sim_root: Path) -> list[str]:
    return [hardware.lost_gpu_error(fault) for _, fault in HostState(sim_root, scenario).active_faults() if fault.lost]


def nvidia_smi(scenario: Scenario, sim_root: Path, args: list[str]) -> int:
    if scenario.host.gpu_count == 0:
        print(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the "
            "latest NVIDIA driver is installed and running."
        )
        return 9
    gpus = _gpus(scenario, sim_root)
    for error in _lost(scenario, sim_root):
        print(error, file=sys.stderr)
    if args[:1] == ["-L"]:
        for gpu in gpus:
            print(f"GPU {gpu.index}: {gpu.name} (UUID: {hardware.gpu_uuid(scenario, gpu.index)})")
        return 0
    if args[:1] == ["topo"]:
        names = [f"GPU{gpu.index}" for gpu in gpus]
        print("\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity")
        for row in gpus:
            cells = ["X" if row.index == col.index else scenario.host.link() for col in gpus]
            print(f"GPU{row.index}\t" + "\t".join(cells) + f"\t0-{scenario.host.cpu_cores - 1}\t0")
        return 0
    queries = [arg.split("=", 1)[1] for arg in args if arg.startswith("--query-gpu=")]
    if queries:
        fields = [field.strip() for field in queries[0].split(",")]
        formats = next((arg.split("=", 1)[1] for arg in args if arg.startswith("--format=")), "csv")
        unknown = [field for field in fields if field not in QUERY_FIELDS]
        if unknown:
            print(f'Field "{unknown[0]}" is not a valid field to query.', file=sys.stderr)
            return 2
        if "noheader" not in formats:
            print(", ".join(fields))
        for gpu in gpus:
            values = [QUERY_FIELDS[field](gpu, scenario) for field in fields]
            if "nounits" in formats:
                values = [value.removesuffix(" MiB").removesuffix(" %") for value in values]
            print(", ".join(values))
        return 0
    if args and args[0] not in ("-q",):
        print(f"Invalid combination of input arguments: {' '.join(args)}", file=sys.stderr)
        return 2
    print(
        f"NVIDIA-SMI {scenario.host.driver_version or 'N/A'}    "
        f"Driver Version: {scenario.host.driver_version or 'N/A'}"
        f"    CUDA Version: {scenario.host.cuda_version or 'N/A'}"
    )
    for gpu in gpus:
        faults = f"  ECC uncorrected: {gpu.ecc_errors_uncorrected}" if gpu.ecc_errors_uncorrected else ""
        print(
            f"|  {gpu.index}  {gpu.name:<48} | {hardware.pci_bus_id(gpu.index)} | "
            f"{gpu.memory_used_mib:>6}MiB / "
            f"{gpu.memory_total_mib}MiB | {gpu.utilization_percent or 0:>3}% |{faults}"
        )
    return 0


def _dmesg(scenario: Scenario, sim_root: Path) -> list[str]:
    """Boot lines, the reports of faults present from the start or due by the clock, then what the kernel
    logged while the host ran (faults that struck mid-run, OOM-killer kills)."""
    lines = [
        f"[    0.000000] Linux version 6.8.0-sim ({scenario.host.hostname})",
        "[   12.418221] nvidia: module license 'NVIDIA' taints kernel.",
    ]
    state = HostState(sim_root, scenario)
    struck = state.struck()
    for index, fault in state.active_faults():
        if index not in struck:
            report = hardware.fault_kernel_lines(fault)
            lines += [f"[ 8123.{40 + number:06d}] {line}" for number, line in enumerate(report)]
    return lines + state.kernel_lines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="twin.hostcmd")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--sim-root", required=True, type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    parsed = parser.parse_args(argv)
    command = parsed.command[1:] if parsed.command[:1] == ["--"] else parsed.command
    if not command:
        parser.error("no command given")
    try:
        scenario, _ = load_scenario(parsed.scenario)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    program, args = command[0], command[1:]
    host = scenario.host
    if program == "nvidia-smi":
        return nvidia_smi(scenario, parsed.sim_root, args)
    if program == "nproc":
        print(host.cpu_cores)
    elif program == "lscpu":
        print(
            f"Architecture:            x86_64\nCPU(s):                  {host.cpu_cores}\n"
            f"Model name:              {host.cpu_model}\nThread(s) per core:      1\n"
            "NUMA node(s):            1"
        )
    elif program == "free":
        total = int(host.ram_gib * 2**30)
        scale = 2**30 if "-g" in args else (1 if "-b" in args else 1024)
        used = int(total * 0.06)
        print("               total        used        free      shared  buff/cache   available")
        print(
            f"Mem:    {total // scale:>12} {used // scale:>11} {(total - used) // scale:>11} {0:>11} {0:>11} "
            f"{(total - used) // scale:>11}"
        )
        print(f"Swap:   {0:>12} {0:>11} {0:>11}")
    elif program == "df":
        size, free = int(host.disk_free_gib * 1.25 * 2**20), int(host.disk_free_gib * 2**20)  # KiB
        human = "-h" in args
        columns = [f"{value / 2**20:.0f}G" if human else str(value) for value in (size, size - free, free)]
        print(f"Filesystem     {'Size' if human else '1K-blocks':>10} {'Used':>10} {'Avail':>10} Use% Mounted on")
        print(f"/dev/nvme0n1p2 {columns[0]:>10} {columns[1]:>10} {columns[2]:>10} {100 * (size - free) // size:>3}% /")
    elif program == "dmesg":
        print("\n".join(_dmesg(scenario, parsed.sim_root)))
    elif program == "ss":
        real = shutil.which("ss")
        if real:
            print(subprocess.run([real, *args], capture_output=True, text=True, check=False).stdout, end="")
        for index, port in enumerate(host.ports_in_use):
            print(
                f'LISTEN 0      4096         0.0.0.0:{port}      0.0.0.0:*    users:(("nginx",pid={2211 + index},fd=6))'
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
