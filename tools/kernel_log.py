"""read_kernel_log: what the kernel said about the GPUs and about killed processes.

An engine log cannot tell that its GPU fell off the bus or that the kernel's OOM killer ended it: the
process just dies, or NCCL reports an error on another rank. The kernel log can. The tool reads ``dmesg``
(or, where that is not permitted, ``journalctl -k``) on the host and picks out NVIDIA Xid reports, GPUs
that fell off the bus, and OOM-killer kills, each as a typed event with the line it came from.
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput
from tools.redact import redact_text

# Xids that mean the GPU or its link is failing, not the program (NVIDIA's Xid catalogue).
HARDWARE_XIDS = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 154}
_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<code>\d+)")
_OFF_BUS = re.compile(r"fallen off the bus", re.IGNORECASE)
_OOM = re.compile(r"(?:Out of memory|Memory cgroup out of memory): Killed process (?P<pid>\d+) \((?P<name>[^)]*)\)")
_NVRM = re.compile(r"NVRM: .*(?:GPU|RmInit|failed)", re.IGNORECASE)
COMMANDS = (["dmesg"], ["journalctl", "-k", "--no-pager", "-n", "2000"])

EventKind = Literal["gpu_hardware", "gpu_lost", "xid", "oom_kill", "nvrm"]


class KernelEvent(BaseModel):
    kind: EventKind
    line: str
    xid: int | None = None
    pci: str | None = None
    pid: int | None = None
    process: str | None = None


class ReadKernelLogArgs(ToolArgs):
    max_lines: int = Field(2000, ge=10, le=100_000, description="How many of the newest kernel log lines to scan.")
    host: str | None = Field(default=None, description="Host whose kernel log to read (default: the run's first host)")


class ReadKernelLogOutput(ToolOutput):
    readable: bool
    source: str | None = None  # the command that could read it
    error: str | None = None  # why it could not be read
    events: list[KernelEvent] = Field(default_factory=list)
    summary: str = ""


def parse_events(lines: list[str]) -> list[KernelEvent]:
    """The GPU and OOM events among kernel log lines, oldest first."""
    events: list[KernelEvent] = []
    for raw in lines:
        line = redact_text(raw.strip())
        xid, oom = _XID.search(line), _OOM.search(line)
        if xid is not None:
            code = int(xid.group("code"))
            kind: EventKind = "gpu_lost" if code == 79 else "gpu_hardware" if code in HARDWARE_XIDS else "xid"
            events.append(KernelEvent(kind=kind, line=line, xid=code, pci=xid.group("pci")))
        elif _OFF_BUS.search(line):
            events.append(KernelEvent(kind="gpu_lost", line=line))
        elif oom is not None:
            events.append(KernelEvent(kind="oom_kill", line=line, pid=int(oom.group("pid")), process=oom.group("name")))
        elif _NVRM.search(line):
            events.append(KernelEvent(kind="nvrm", line=line))
    return events


def _summary(events: list[KernelEvent]) -> str:
    if not events:
        return "no GPU errors and no OOM kills in the kernel log"
    counts: dict[str, int] = {}
    for event in events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in counts.items())


class ReadKernelLogTool(Tool[ReadKernelLogArgs, ReadKernelLogOutput]):
    name = "read_kernel_log"
    description = (
        "Read the host's kernel log (dmesg, else journalctl -k) for GPU faults the engine log cannot show: "
        "NVIDIA Xid errors (hardware ones such as 48/63/79/94/95 flagged), GPUs that fell off the bus, and "
        "processes the OOM killer ended. Use it after a failed launch the engine log does not explain."
    )
    args_model = ReadKernelLogArgs
    output_model = ReadKernelLogOutput
    timeout_seconds: ClassVar[float] = 60.0

    def run(self, args: ReadKernelLogArgs, context: ToolContext) -> ReadKernelLogOutput:
        reasons = []
        host = context.host_named(args.host)
        for command in COMMANDS:
            result = host.run(command, timeout=30)
            if result.exit_code == 0 and result.stdout.strip():
                lines = result.stdout.splitlines()[-args.max_lines :]
                events = parse_events(lines)
                return ReadKernelLogOutput(readable=True, source=command[0], events=events, summary=_summary(events))
            detail = (result.stderr or result.stdout).strip().splitlines()
            reasons.append(f"{command[0]}: {detail[-1] if detail else f'exit code {result.exit_code}'}")
        return ReadKernelLogOutput(readable=False, error="; ".join(reasons), summary="kernel log not readable")
