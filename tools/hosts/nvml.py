"""GPU facts from NVML (nvidia-ml-py, ``import pynvml``) for the local host.

Every entry point returns a result instead of raising: a machine without the NVIDIA driver, or
without the Python binding, yields a :class:`GpuProbe` whose ``error`` starts with
``"no NVIDIA driver/GPU found"``. Optional per-device queries (ECC, temperature, NVLink) that a GPU
does not support are left as None rather than failing the whole probe.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from tools.hosts.base import GpuInfo, GpuLink, GpuProbe, Interconnect

NO_GPU_PREFIX = "no NVIDIA driver/GPU found"
ValueT = TypeVar("ValueT")

# nvmlDeviceGetTopologyCommonAncestor levels mapped onto the `nvidia-smi topo -m` vocabulary.
_TOPOLOGY_NAMES = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _optional(query: Callable[[], ValueT], nvml: Any) -> ValueT | None:
    try:
        return query()
    except nvml.NVMLError:
        return None


def _gpu_info(nvml: Any, index: int, handle: Any) -> GpuInfo:
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    capability = _optional(lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle), nvml)
    utilization = _optional(lambda: nvml.nvmlDeviceGetUtilizationRates(handle), nvml)
    return GpuInfo(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        compute_capability=f"{capability[0]}.{capability[1]}" if capability else "",
        memory_total_mib=int(memory.total) // (1024 * 1024),
        memory_used_mib=int(memory.used) // (1024 * 1024),
        utilization_percent=int(utilization.gpu) if utilization is not None else None,
        temperature_c=_optional(lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)), nvml),
        ecc_errors_uncorrected=_optional(
            lambda: int(
                nvml.nvmlDeviceGetTotalEccErrors(
                    handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
                )
            ),
            nvml,
        ),
    )


def _nvlink_peers(nvml: Any, handle: Any) -> dict[str, int]:
    """PCI bus id of each NVLink peer -> number of active links to it."""
    peers: dict[str, int] = {}
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        state = _optional(partial(nvml.nvmlDeviceGetNvLinkState, handle, link), nvml)
        if state != nvml.NVML_FEATURE_ENABLED:
            continue
        remote = _optional(partial(nvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link), nvml)
        if remote is not None:
            bus_id = _text(remote.busId).lower()
            peers[bus_id] = peers.get(bus_id, 0) + 1
    return peers


def _links(nvml: Any, handles: list[Any]) -> list[GpuLink]:
    bus_ids = [_text(nvml.nvmlDeviceGetPciInfo(handle).busId).lower() for handle in handles]
    peers = [_nvlink_peers(nvml, handle) for handle in handles]
    links: list[GpuLink] = []
    for first, second in itertools.combinations(range(len(handles)), 2):
        nvlink_count = peers[first].get(bus_ids[second], 0)
        if nvlink_count:
            link = f"NV{nvlink_count}"
        else:
            ancestor = partial(nvml.nvmlDeviceGetTopologyCommonAncestor, handles[first], handles[second])
            level = _optional(ancestor, nvml)
            link = _TOPOLOGY_NAMES.get(int(level), "unknown") if level is not None else "unknown"
        p2p = _optional(
            partial(nvml.nvmlDeviceGetP2PStatus, handles[first], handles[second], nvml.NVML_P2P_CAPS_INDEX_READ), nvml
        )
        links.append(
            GpuLink(
                gpu_a=first,
                gpu_b=second,
                link=link,
                p2p_supported=None if p2p is None else p2p == nvml.NVML_P2P_STATUS_OK,
            )
        )
    return links


def interconnect_of(gpu_count: int, links: list[GpuLink]) -> Interconnect:
    """ "nvlink" when any pair shares NVLink, "pcie" when several GPUs talk only over PCIe."""
    if gpu_count < 2:
        return "none"
    if any(link.link.startswith("NV") for link in links):
        return "nvlink"
    if links and all(link.link != "unknown" for link in links):
        return "pcie"
    return "unknown"


def _cuda_version(nvml: Any) -> str | None:
    version = _optional(nvml.nvmlSystemGetCudaDriverVersion, nvml)
    if not version:
        return None
    return f"{int(version) // 1000}.{(int(version) % 1000) // 10}"


def probe_gpus() -> GpuProbe:
    """Inventory, topology, driver and CUDA versions; an ``error`` instead of an exception."""
    try:
        import pynvml
    except ImportError as error:
        return GpuProbe(error=f"{NO_GPU_PREFIX}: the NVML binding is not installed ({error})")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return GpuProbe(error=f"{NO_GPU_PREFIX}: {error}")
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(index) for index in range(pynvml.nvmlDeviceGetCount())]
        gpus = [_gpu_info(pynvml, index, handle) for index, handle in enumerate(handles)]
        links = _links(pynvml, handles)
        return GpuProbe(
            gpus=gpus,
            topology=links,
            interconnect=interconnect_of(len(gpus), links),
            driver_version=_text(pynvml.nvmlSystemGetDriverVersion()),
            cuda_version=_cuda_version(pynvml),
            error=None if gpus else f"{NO_GPU_PREFIX}: the driver reports 0 devices",
        )
    except pynvml.NVMLError as error:
        return GpuProbe(error=f"NVML query failed: {error}")
    finally:
        _optional(pynvml.nvmlShutdown, pynvml)


def memory_used_mib() -> list[int] | None:
    """Memory in use on each GPU, or None when NVML is unavailable."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(index) for index in range(pynvml.nvmlDeviceGetCount())]
        return [int(pynvml.nvmlDeviceGetMemoryInfo(handle).used) // (1024 * 1024) for handle in handles]
    except pynvml.NVMLError:
        return None
    finally:
        _optional(pynvml.nvmlShutdown, pynvml)
