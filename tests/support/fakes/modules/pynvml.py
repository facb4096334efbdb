"""A stand-in for the NVML binding (nvidia-ml-py) describing a 4-GPU box, for hosts without a driver.

Only the calls tools.hosts.nvml makes exist. GPUs 0 and 1 share four NVLinks; the rest talk over PCIe;
GPU 3 cannot do P2P with GPU 2; ECC counters are "not supported" on GPU 2. FAKE_NVML_FAIL=1 makes
nvmlInit fail the way it does without a driver. Used only through PYTHONPATH in a child process.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

NVML_TEMPERATURE_GPU = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_NVLINK_MAX_LINKS = 18
NVML_FEATURE_ENABLED = 1
NVML_P2P_CAPS_INDEX_READ = 0
NVML_P2P_STATUS_OK = 0
NVML_P2P_STATUS_NOT_SUPPORTED = 5
MIB = 1024 * 1024
BUS_IDS = [f"00000000:{bus:02X}:00.0" for bus in (0x18, 0x3B, 0x86, 0xAF)]


class NVMLError(Exception):
    pass


def nvmlInit() -> None:
    if os.environ.get("FAKE_NVML_FAIL"):
        raise NVMLError("Driver Not Loaded")


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return 4


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    return index


def nvmlDeviceGetName(handle: int) -> bytes:
    return b"NVIDIA RTX PRO 6000 Blackwell Server Edition"


def nvmlDeviceGetMemoryInfo(handle: int) -> SimpleNamespace:
    return SimpleNamespace(total=97_887 * MIB, used=(500 + 1000 * handle) * MIB)


def nvmlDeviceGetCudaComputeCapability(handle: int) -> tuple[int, int]:
    return 12, 0


def nvmlDeviceGetUtilizationRates(handle: int) -> SimpleNamespace:
    return SimpleNamespace(gpu=10 * handle, memory=0)


def nvmlDeviceGetTemperature(handle: int, sensor: int) -> int:
    return 40 + handle


def nvmlDeviceGetTotalEccErrors(handle: int, error_type: int, counter: int) -> int:
    if handle == 2:
        raise NVMLError("Not Supported")
    return 0


def nvmlDeviceGetNvLinkState(handle: int, link: int) -> int:
    if handle in (0, 1) and link < 4:
        return NVML_FEATURE_ENABLED
    raise NVMLError("Not Supported")


def nvmlDeviceGetNvLinkRemotePciInfo(handle: int, link: int) -> SimpleNamespace:
    return SimpleNamespace(busId=BUS_IDS[1 - handle].encode())


def nvmlDeviceGetPciInfo(handle: int) -> SimpleNamespace:
    return SimpleNamespace(busId=BUS_IDS[handle].encode())


def nvmlDeviceGetTopologyCommonAncestor(first: int, second: int) -> int:
    return 30 if {first, second} <= {2, 3} else 50


def nvmlDeviceGetP2PStatus(first: int, second: int, index: int) -> int:
    return NVML_P2P_STATUS_NOT_SUPPORTED if {first, second} == {2, 3} else NVML_P2P_STATUS_OK


def nvmlSystemGetDriverVersion() -> str:
    return "570.133.20"


def nvmlSystemGetCudaDriverVersion() -> int:
    return 12080
