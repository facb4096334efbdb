"""The host's NUMA nodes: CPUs and memory per node, for deployments on the CPU.

A CPU engine binds each tensor-parallel rank to one NUMA node and allocates its KV cache there, checking it
against that node's available memory (vLLM's CPU worker counts free memory plus file cache plus reclaimable
slab, from ``/sys/devices/system/node/nodeN/meminfo``). A host without per-node files (no NUMA) is one node
with ``/proc/meminfo``'s figures. Read by a stdlib-only script with any interpreter through ``host.run``.
"""

from __future__ import annotations

import json

from tools.hosts.base import Host
from tools.records import NumaNode

NODES_SCRIPT = r"""
import glob, json, os, re
def meminfo(path, prefix=""):
    values = {}
    with open(path) as handle:
        for line in handle:
            parts = line[len(prefix):].split() if line.startswith(prefix) else line.split()
            if len(parts) >= 2 and parts[0].endswith(":"):
                values[parts[0][:-1]] = int(parts[1]) * 1024
    return values
def available(values):
    return sum(values.get(key, 0) for key in ("MemFree", "Active(file)", "Inactive(file)", "SReclaimable"))
def count_cpus(text):
    total = 0
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            total += int(high) - int(low) + 1
        elif part:
            total += 1
    return total
nodes = []
for directory in sorted(glob.glob("/sys/devices/system/node/node[0-9]*"), key=lambda d: int(re.sub(r"\D", "", d))):
    number = int(re.sub(r"\D", "", os.path.basename(directory)))
    values = meminfo(os.path.join(directory, "meminfo"), f"Node {number} ")
    with open(os.path.join(directory, "cpulist")) as handle:
        cpus = count_cpus(handle.read())
    if cpus:
        nodes.append({"node": number, "cpus": cpus, "total": values.get("MemTotal", 0), "available": available(values)})
if not nodes:
    values = meminfo("/proc/meminfo")
    nodes.append({"node": 0, "cpus": os.cpu_count() or 1, "total": values.get("MemTotal", 0),
                  "available": values.get("MemAvailable", available(values))})
print(json.dumps(nodes))
"""
GIB = 1024**3


def numa_nodes(host: Host, python: str, timeout: float = 30.0) -> list[NumaNode]:
    """The host's NUMA nodes that have CPUs; empty when the script cannot run (not Linux)."""
    result = host.run([python, "-c", NODES_SCRIPT], timeout=timeout)
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1]) if result.exit_code == 0 else []
    except (ValueError, IndexError):
        return []
    return [
        NumaNode(
            node=int(item["node"]),
            cpus=int(item["cpus"]),
            total_gib=round(item["total"] / GIB, 2),
            available_gib=round(item["available"] / GIB, 2),
        )
        for item in found
        if isinstance(item, dict)
    ]
