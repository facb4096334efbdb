"""The kernel's log about an engine's processes: the OOM killer's lines, read with ``dmesg``.

An engine whose process (or worker) was killed with SIGKILL often met the kernel's OOM killer, which says so
only in the kernel log (``Out of memory: Killed process 1234 (python3) ...``, ``oom-kill:...,pid=1234,...``,
``Memory cgroup out of memory: Killed process 1234 ...``). :func:`oom_kill_lines` keeps the lines that name
one of the engine's processes: the pids the engine printed in its log (vLLM's ``(Worker pid=N)`` prefixes,
SGLang's ``pid=N``) and the pids the agent recorded. An OOM kill among them is evidence for
``process_killed`` (:func:`kernel_evidence`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tools.hosts.base import Host
from tools.logs.evidence import Evidence
from tools.logs.library import SignatureLibrary

DMESG_TIMEOUT_SECONDS = 10.0
LOG_LINES_FOR_PIDS = 2000
LOG_BYTES_FOR_PIDS = 8 * 1024 * 1024
KERNEL_PRIORITY = 75  # above the generic "a worker died" signatures, below a specific Python error
_KILLED = re.compile(r"(?:Out of memory|out of memory): Killed process (?P<pid>\d+)|oom-kill:.*?\bpid=(?P<task>\d+)")
_LOG_PIDS = re.compile(r"\bpid[= ](\d+)")


def log_pids(text: str) -> set[int]:
    """Process ids an engine's log names in its line prefixes (``(EngineCore pid=1686)``)."""
    return {int(match) for match in _LOG_PIDS.findall(text)}


def oom_kill_lines(kernel_log: str, pids: Iterable[int]) -> list[str]:
    """The kernel log's OOM-killer lines about any of ``pids``, in order."""
    wanted = set(pids)
    found = []
    for line in kernel_log.splitlines():
        match = _KILLED.search(line)
        if match is not None and int(match.group("pid") or match.group("task")) in wanted:
            found.append(line.strip())
    return found


def read_oom_kills(host: Host, pids: Iterable[int]) -> list[str]:
    """OOM-killer lines about ``pids`` from the host's kernel log; empty when ``dmesg`` cannot be read
    (not installed, or the kernel restricts it to privileged users)."""
    result = host.run(["dmesg"], timeout=DMESG_TIMEOUT_SECONDS)
    if result.exit_code != 0:
        return []
    return oom_kill_lines(result.stdout, pids)


def engine_oom_kills(host: Host, pids: Iterable[int], log_path: str) -> list[str]:
    """OOM-killer lines about the engine: the recorded ``pids`` and those its log's recent lines name (the log
    and the kernel log are both read on ``host``, where the engine runs)."""
    named = set(pids)
    if host.file_facts(log_path) is not None:
        lines = host.read_last_lines(log_path, LOG_LINES_FOR_PIDS, max_bytes=LOG_BYTES_FOR_PIDS).lines
        named |= log_pids("\n".join(lines))
    return read_oom_kills(host, named)


def kernel_evidence(kernel_lines: list[str], index: int, library: SignatureLibrary) -> list[Evidence]:
    killed = [line for line in kernel_lines if _KILLED.search(line)]
    if not killed:
        return []
    return [
        Evidence(
            "exit",
            "process_killed",
            KERNEL_PRIORITY,
            0.9,
            index,
            f"the kernel's OOM killer killed an engine process ({killed[-1][:160]})",
            list(library.class_remedies["process_killed"]),
            "The kernel OOM killer ended an engine process: host RAM ran out.",
        )
    ]
