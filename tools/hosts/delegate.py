"""A host that passes every operation to another one; a wrapper overrides only what it changes."""

from __future__ import annotations

import signal
from pathlib import Path

from tools.hosts.base import (
    CommandResult,
    ConfinedFile,
    FileFacts,
    GpuProbe,
    Host,
    LineFilter,
    MarkedProcess,
    NetworkInterface,
    ProcessStatus,
    SpawnedProcess,
)
from tools.hosts.sandbox import Confinement
from tools.logs.reader import SinceRead, TailRead
from tools.logs.window import LogWindow


class DelegatingHost(Host):
    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self.name = inner.name
        self.shares_agent_files = inner.shares_agent_files

    def run(
        self,
        argv: list[str],
        *,
        timeout: float,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        input_text: str | None = None,
        output_cap_bytes: int = 1_000_000,
        confinement: Confinement | None = None,
    ) -> CommandResult:
        return self.inner.run(
            argv,
            timeout=timeout,
            cwd=cwd,
            env=env,
            input_text=input_text,
            output_cap_bytes=output_cap_bytes,
            confinement=confinement,
        )

    def spawn(self, argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> SpawnedProcess:
        return self.inner.spawn(argv, env=env, log_path=log_path, cwd=cwd)

    def status(self, pid: int, create_time: float) -> ProcessStatus:
        return self.inner.status(pid, create_time)

    def signal_group(self, pid: int, create_time: float, signum: int = signal.SIGTERM) -> bool:
        return self.inner.signal_group(pid, create_time, signum)

    def probe_gpus(self) -> GpuProbe:
        return self.inner.probe_gpus()

    def gpu_memory_used_mib(self) -> list[int] | None:
        return self.inner.gpu_memory_used_mib()

    def find_marked(self, variable: str) -> list[MarkedProcess]:
        return self.inner.find_marked(variable)

    def group_members(self, pgid: int, variable: str) -> list[MarkedProcess]:
        return self.inner.group_members(pgid, variable)

    def signal_process(self, pid: int, create_time: float, signum: int) -> bool:
        return self.inner.signal_process(pid, create_time, signum)

    @property
    def time_scale(self) -> float:
        return self.inner.time_scale

    def translate(self, argv: list[str]) -> list[str]:
        return self.inner.translate(argv)

    def file_facts(self, path: str) -> FileFacts | None:
        return self.inner.file_facts(path)

    def read_last_lines(
        self, path: str, max_lines: int, *, max_bytes: int, line_filter: LineFilter | None = None
    ) -> TailRead:
        return self.inner.read_last_lines(path, max_lines, max_bytes=max_bytes, line_filter=line_filter)

    def read_since(self, path: str, offset: int, *, max_bytes: int) -> SinceRead:
        return self.inner.read_since(path, offset, max_bytes=max_bytes)

    def read_window(self, path: str, *, head_bytes: int, tail_bytes: int) -> LogWindow:
        return self.inner.read_window(path, head_bytes=head_bytes, tail_bytes=tail_bytes)

    def read_confined(self, raw_path: str, roots: list[str]) -> ConfinedFile:
        return self.inner.read_confined(raw_path, roots)

    def write_confined(self, raw_path: str, roots: list[str], data: bytes, expected: ConfinedFile | None) -> None:
        self.inner.write_confined(raw_path, roots, data, expected)

    def agent_places(self) -> list[str]:
        return self.inner.agent_places()

    def real_path(self, path: str) -> str:
        return self.inner.real_path(path)

    def home(self) -> str:
        return self.inner.home()

    def log_dir(self, agent_logs: Path) -> Path:
        return self.inner.log_dir(agent_logs)

    def working_dir(self) -> Path:
        return self.inner.working_dir()

    def write_roots(self, configured: list[Path]) -> list[Path]:
        return self.inner.write_roots(configured)

    def connect_error(self, address: str, port: int, timeout: float = 1.0) -> str | None:
        return self.inner.connect_error(address, port, timeout)

    def endpoint(self, address: str, port: int) -> tuple[str, int]:
        return self.inner.endpoint(address, port)

    def interfaces(self) -> list[NetworkInterface]:
        return self.inner.interfaces()

    def route_to(self, address: str) -> tuple[str | None, str | None]:
        return self.inner.route_to(address)

    def infiniband_ports(self) -> list[dict[str, str]]:
        return self.inner.infiniband_ports()

    def clock(self) -> float:
        return self.inner.clock()

    def listen(self, address: str, port: int, seconds: float) -> tuple[int | None, str | None]:
        return self.inner.listen(address, port, seconds)

    def stop_listening(self, port: int) -> None:
        self.inner.stop_listening(port)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
