"""What native code prints as it dies: crash banners, the signal they name, and failed checks.

Banners: the interpreter's fault handler, glibc-style signal reports, the banner of the stack printer
PyTorch-based programs install ("!!!!!!! Segfault encountered !!!!!!!"), UCX's handler ("[host:pid:0:tid] Caught
signal 11 (Segmentation fault: address not mapped ...)", its bracket sometimes with a space), Open MPI's ("***
Process received signal ***", then "Signal: Segmentation fault (11)" on the next line), ROCm's runtime's report of a
GPU page fault, after which it aborts the process ("Memory access fault by GPU node-2 (Agent handle: ...) on address
..."), and the line each GPU thread prints when a kernel's assertion fails ("...: block: [337,0,0], thread:
[112,0,0] Assertion `index out of bounds: ...` failed."), the device-side assertion the host reports next. Checks: a
native check that prints and exits (vLLM's CUDACHECK in csrc/custom_all_reduce.cuh, NCCL tests' NCCLCHECK):
"Failed: Cuda error csrc/custom_all_reduce.cuh:368 'invalid argument'"; some builds omit the kind; nccl-tests' own:
"Test CUDA failure common.cu:963 'invalid device ordinal'", in releases before 2.0 without the word "Test":
"Cuda failure common.cu:891 'CUDA driver version is insufficient for CUDA runtime version'".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BANNER = re.compile(
    r"^Fatal Python error: (?P<message>.+)|^\*\*\* (?P<signal>SIG[A-Z]+) received"
    r"|^!+ ?(?P<banner>\w+) encountered ?!+|^\[[^\]]+\] Caught signal (?P<number>\d+) \((?P<caught>[^:)]+)"
    r"|^\*\*\* Process received (?P<received>signal) \*\*\*"
    r"|^Memory access fault by GPU (?P<gpu>node-\d+)"
    r"|block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] (?P<assertion>Assertion `.*` failed)"
)
_SIGNAL_NAMED = re.compile(r"^Signal: (?P<name>[^(]+?) \((?P<number>\d+)\)")
_CHECK = re.compile(
    r"(?:Failed[:,] (?:(?P<kind>Cuda|CUDA|NCCL|MPI) error )?|(?:Test )?(?P<test_kind>CUDA|Cuda|NCCL) failure )"
    r"(?P<path>[\w./-]+\.(?:cuh?|cpp|cc|hpp|h)):(?P<line>\d+) '(?P<message>[^']*)'"
)


@dataclass(frozen=True)
class NativeCheck:
    kind: str  # CUDA, NCCL or MPI
    path: str
    line: int
    message: str


def crash_banner(text: str) -> tuple[str, str] | None:
    """The crash's type and message when this line opens a crash report."""
    crash = _BANNER.search(text)
    if crash is None:
        return None
    if crash.group("message"):
        return "Fatal Python error", crash.group("message")
    if crash.group("signal"):
        return crash.group("signal"), f"{crash.group('signal')} received"
    if crash.group("received"):
        return "signal", "Process received signal"
    if crash.group("gpu"):  # ROCm's runtime reports a GPU page fault this way, then aborts the process
        return "Memory access fault", f"Memory access fault by GPU {crash.group('gpu')} (the HIP runtime aborts)"
    if crash.group("assertion"):  # printed by each GPU thread whose check failed; the host then reports it
        return "device-side assertion", f"device-side assertion triggered: {crash.group('assertion')}"
    if crash.group("caught"):
        return f"signal {crash.group('number')}", crash.group("caught")
    return crash.group("banner"), f"{crash.group('banner')} encountered"


def signal_named(text: str) -> tuple[str, str] | None:
    """The type and message of a "Signal: Segmentation fault (11)" line (Open MPI names the signal after its banner)."""
    named = _SIGNAL_NAMED.search(text)
    return (f"signal {named.group('number')}", named.group("name")) if named else None


def native_check(text: str) -> NativeCheck | None:
    check = _CHECK.search(text)
    if check is None:
        return None
    kind = (check.group("kind") or check.group("test_kind") or "CUDA").upper()
    return NativeCheck(kind, check.group("path"), int(check.group("line")), check.group("message"))
