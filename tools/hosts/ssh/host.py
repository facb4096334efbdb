"""A machine reached over SSH as a :class:`Host`: every operation runs there, through its helper.

The first use opens (or reuses) the ControlMaster connection and starts the helper (:mod:`tools.hosts.remote`),
installing its zip under ``~/.cache/opsloop/`` when that version is not there yet. Later operations are one
request over the open session, so a tool call adds a round trip, not a new login.

Processes are started detached under the helper's supervisor, in their own session, so they outlive the SSH
connection and the agent; their identity is (pid, create_time) read on the remote, and their exit codes land
in ``~/.opsloop/exits`` there (``remote_dir``). Logs go to ``~/.opsloop/runs/<run>/logs`` on the remote and are
read there.

A dropped connection: operations that change nothing are repeated once on a new connection; one that may have
changed something (a command, a start, a signal, a write) raises :class:`CallInterrupted`, so the call is
reported as interrupted and never repeated blindly. HTTP to a server on the host goes through a local port
forwarded over the shared connection (:meth:`endpoint`).
"""

from __future__ import annotations

import base64
import dataclasses
import secrets
import shlex
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from tools.hosts.base import (
    CallInterrupted,
    CommandResult,
    ConfinedFile,
    FileFacts,
    GpuProbe,
    Host,
    HostUnreachable,
    LineFilter,
    MarkedProcess,
    NetworkInterface,
    ProcessStatus,
    SpawnedProcess,
)
from tools.hosts.remote import bundle
from tools.hosts.remote.operations import IDEMPOTENT
from tools.hosts.sandbox import Confinement, SandboxUnavailable
from tools.hosts.ssh import gpus
from tools.hosts.ssh.channel import ChannelClosed, HelperChannel, RemoteError
from tools.hosts.ssh.connection import SshConnection, classify
from tools.hosts.ssh.target import SshTarget
from tools.logs.line_filter import compile_filter
from tools.logs.reader import SinceRead, TailRead, last_frame
from tools.logs.window import LogWindow
from tools.patch.write_guard import WriteRefused

HELPER_DIR = ".cache/opsloop"  # relative to the remote home, where an SSH session starts
NO_HELPER = "can't open file"  # what Python says when the helper of this version is not installed yet
SSH_FAILED = 255  # ssh's own exit status when it could not connect, log in or trust the host


class SshHost(Host):
    shares_agent_files = False

    def __init__(
        self,
        target: SshTarget,
        *,
        name: str | None = None,
        ssh_config: Path | None = None,
        control_dir: Path | None = None,
        python: str = "python3",
        run_id: str = "default",
        working_dir: str | None = None,
        write_roots: list[str] | None = None,
        remote_dir: str | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self.name = name or target.label
        self.target = target
        self.connection = SshConnection(
            target, ssh_config=ssh_config, control_dir=control_dir, connect_timeout=connect_timeout
        )
        self.python, self.run_id = python, run_id
        self._working_dir, self._write_roots, self._remote_dir = working_dir, list(write_roots or []), remote_dir
        self._lock = threading.Lock()
        self._channel: HelperChannel | None = None
        self._hello: dict[str, Any] = {}
        self._forwards: dict[tuple[str, int], int] = {}

    # -- the helper session --------------------------------------------------------------------------------

    def _helper_command(self) -> str:
        path = f"{HELPER_DIR}/{bundle.build().file_name}"
        return f"exec {shlex.quote(self.python)} -I {path} serve"

    def _install_helper(self) -> None:
        helper = bundle.build()
        final = f"{HELPER_DIR}/{helper.file_name}"
        partial = f"{final}.{secrets.token_hex(4)}.part"
        command = f"mkdir -p {HELPER_DIR} && cat > {partial} && mv -f {partial} {final}"
        argv = self.connection.command(command)
        timeout = self.connection.connect_timeout + 60
        completed = subprocess.run(argv, input=helper.data, capture_output=True, timeout=timeout, check=False)
        if completed.returncode != 0:
            raise classify(self.target, completed.stderr.decode(errors="replace"))

    def _open(self) -> HelperChannel:
        timeout = self.connection.connect_timeout + 30
        for attempt in (1, 2):
            try:
                return HelperChannel(self.connection.command(self._helper_command()), hello_timeout=timeout)
            except ChannelClosed as closed:
                if closed.exit_code == SSH_FAILED:  # ssh itself: the connection, the login or the host key
                    raise classify(self.target, closed.stderr) from None
                if NO_HELPER in closed.stderr and attempt == 1:
                    self._install_helper()
                    continue
                if "not found" in closed.stderr or "No such file" in closed.stderr:
                    raise HostUnreachable(
                        f"{self.name}: cannot start the helper with {self.python!r} ({closed.stderr.strip()[-200:]}); "
                        "set the host's python to a Python 3.8+ interpreter there"
                    ) from None
                raise classify(self.target, closed.stderr) from None
        raise HostUnreachable(f"{self.name}: the helper could not be installed")

    def _session(self) -> HelperChannel:
        with self._lock:
            if self._channel is None or not self._channel.alive:
                reopened = self._channel is not None
                self._channel = self._open()
                self._hello = self._channel.hello
                if reopened:
                    self._restore_forwards()
            return self._channel

    def call(self, op: str, args: dict[str, Any], timeout: float = 60.0) -> Any:
        """One helper operation. Read-only ones are repeated once after a dropped connection; others raise
        CallInterrupted. Helper errors come back as FileNotFoundError, WriteRefused or RuntimeError."""
        for attempt in (1, 2):
            session = self._session()
            try:
                return session.call(op, args, timeout)
            except ChannelClosed as closed:
                if op in IDEMPOTENT and attempt == 1:
                    continue
                raise CallInterrupted(f"the connection to {self.name} dropped during {op}: {closed}") from None
            except TimeoutError as error:
                raise CallInterrupted(f"{self.name}: {error}") from None
            except RemoteError as error:
                if error.kind == "not_found":
                    raise FileNotFoundError(str(error)) from None
                if error.kind == "write_refused":
                    raise WriteRefused(str(error)) from None
                raise RuntimeError(f"{self.name}: {op} failed: {error}") from None
        raise CallInterrupted(f"the connection to {self.name} dropped twice during {op}")

    def hello(self) -> dict[str, Any]:
        """What the helper reported when it started: Python version, home, host name, clock."""
        self._session()
        return dict(self._hello)

    def close(self, end_connection: bool = False) -> None:
        """Stop the helper session (processes it started keep running); ``end_connection`` also ends the shared
        SSH connection, which otherwise stays for the next agent command."""
        with self._lock:
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
        if end_connection:
            self.connection.close_master()

    # -- places on the host ------------------------------------------------------------------------------

    def home(self) -> str:
        return str(self.hello()["home"])

    def _base_dir(self) -> str:
        return self._remote_dir or f"{self.home()}/.opsloop"

    def _run_dir(self) -> str:
        return f"{self._base_dir()}/runs/{self.run_id}"

    def _exit_dir(self) -> str:
        return f"{self._base_dir()}/exits"

    def log_dir(self, agent_logs: Path) -> Path:
        return Path(f"{self._run_dir()}/logs")

    def agent_places(self) -> list[str]:
        return [self._exit_dir(), f"{self._base_dir()}/runs", f"{self.home()}/{HELPER_DIR}"]

    def working_dir(self) -> Path:
        return Path(self._working_dir or self.home())

    def write_roots(self, configured: list[Path]) -> list[Path]:
        return [self.working_dir(), *(Path(root) for root in self._write_roots)]

    # -- commands and processes --------------------------------------------------------------------------

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
        if confinement is not None:
            raise SandboxUnavailable(f"the sandbox confines commands on the agent's machine, not on {self.name}")
        request = {
            "argv": list(argv),
            "timeout": timeout,
            "cwd": None if cwd is None else str(cwd),
            "env": env or {},
            "input_b64": None if input_text is None else base64.b64encode(input_text.encode()).decode(),
            "output_cap_bytes": output_cap_bytes,
        }
        answer = self.call("run", request, timeout=timeout + 30)
        return CommandResult(argv=list(argv), **answer)

    def spawn(self, argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> SpawnedProcess:
        if not argv:
            raise ValueError("spawn needs a command")
        request = {
            "argv": list(argv),
            "env": env,
            "log_path": str(log_path),
            "exit_dir": self._exit_dir(),
            "cwd": None if cwd is None else str(cwd),
        }
        return SpawnedProcess.model_validate(self.call("spawn", request))

    def status(self, pid: int, create_time: float) -> ProcessStatus:
        answer = self.call("status", {"pid": pid, "create_time": create_time, "exit_dir": self._exit_dir()})
        return ProcessStatus.model_validate(answer)

    def signal_group(self, pid: int, create_time: float, signum: int = signal.SIGTERM) -> bool:
        return bool(self.call("signal", {"pid": pid, "create_time": create_time, "signum": int(signum)})["sent"])

    def find_marked(self, variable: str) -> list[MarkedProcess]:
        return [MarkedProcess.model_validate(item) for item in self.call("find_marked", {"variable": variable})]

    # -- GPUs ------------------------------------------------------------------------------------------------

    def probe_gpus(self) -> GpuProbe:
        return gpus.probe(lambda argv: self.run(self.translate(argv), timeout=60))

    def gpu_memory_used_mib(self) -> list[int] | None:
        return gpus.memory_used(lambda argv: self.run(self.translate(argv), timeout=30))

    # -- files -----------------------------------------------------------------------------------------------

    def file_facts(self, path: str) -> FileFacts | None:
        answer = self.call("file_facts", {"path": path})
        return None if answer is None else FileFacts.model_validate(answer)

    def read_last_lines(
        self, path: str, max_lines: int, *, max_bytes: int, line_filter: LineFilter | None = None
    ) -> TailRead:
        if line_filter is not None and line_filter.regex:
            return self._last_lines_matching(path, max_lines, max_bytes, line_filter.pattern)
        request = {"path": path, "max_lines": max_lines, "max_bytes": max_bytes}
        request["filter"] = None if line_filter is None else line_filter.model_dump()
        return TailRead(**self.call("last_lines", request))

    def _last_lines_matching(self, path: str, max_lines: int, max_bytes: int, pattern: str) -> TailRead:
        """A regular-expression filter runs here (RE2 is not on the host): every line within ``max_bytes`` of
        the end comes over, and the last ``max_lines`` that match are kept."""
        keep = compile_filter(pattern, regex=True)
        request = {"path": path, "max_lines": max_bytes, "max_bytes": max_bytes, "filter": None}
        every = TailRead(**self.call("last_lines", request))
        kept = [
            (start, line)
            for start, line in zip(every.line_starts, every.lines, strict=True)
            if keep is None or keep(last_frame(line))
        ][-max_lines:]
        return dataclasses.replace(
            every,
            lines=[line for _, line in kept],
            line_starts=[start for start, _ in kept],
            start_offset=kept[0][0] if kept else every.file_size,
        )

    def read_since(self, path: str, offset: int, *, max_bytes: int) -> SinceRead:
        return SinceRead(**self.call("since", {"path": path, "offset": offset, "max_bytes": max_bytes}))

    def read_window(self, path: str, *, head_bytes: int, tail_bytes: int) -> LogWindow:
        answer = self.call("window", {"path": path, "head_bytes": head_bytes, "tail_bytes": tail_bytes})
        return LogWindow(**answer)

    def read_confined(self, raw_path: str, roots: list[str]) -> ConfinedFile:
        answer = self.call("confined_read", {"path": raw_path, "roots": roots})
        data = base64.b64decode(answer["data_b64"])
        return ConfinedFile(path=answer["path"], data=data, inode=answer["inode"], device=answer["device"])

    def write_confined(self, raw_path: str, roots: list[str], data: bytes, expected: ConfinedFile | None) -> None:
        request = {
            "path": raw_path,
            "roots": roots,
            "data_b64": base64.b64encode(data).decode(),
            "expected": None if expected is None else [expected.inode, expected.device],
        }
        self.call("confined_write", request)

    def real_path(self, path: str) -> str:
        return str(self.call("real_path", {"path": path}))

    # -- network ---------------------------------------------------------------------------------------------

    def connect_error(self, address: str, port: int, timeout: float = 1.0) -> str | None:
        answer = self.call("connect", {"address": address, "port": port, "timeout": timeout}, timeout=timeout + 30)
        error = answer.get("error")
        return None if error is None else str(error)

    def interfaces(self) -> list[NetworkInterface]:
        return [NetworkInterface.model_validate(item) for item in self.call("interfaces", {})]

    def route_to(self, address: str) -> tuple[str | None, str | None]:
        found = self.call("route", {"address": address})
        return found["device"], found["source"]

    def infiniband_ports(self) -> list[dict[str, str]]:
        return list(self.call("infiniband", {}))

    def clock(self) -> float:
        return float(self.call("clock", {}))

    def listen(self, address: str, port: int, seconds: float) -> tuple[int | None, str | None]:
        answer = self.call("listen", {"address": address, "port": port, "seconds": seconds})
        return answer["port"], answer["error"]

    def stop_listening(self, port: int) -> None:
        self.call("stop_listening", {"port": port})

    def endpoint(self, address: str, port: int) -> tuple[str, int]:
        """A local port forwarded over the shared connection to ``address:port`` as the host sees it (kept for
        the life of this object; re-made after a reconnect)."""
        self._session()
        with self._lock:
            local = self._forwards.get((address, port))
            if local is None:
                local = self._forward(address, port)
                self._forwards[(address, port)] = local
        return "127.0.0.1", local

    def _forward(self, address: str, port: int) -> int:
        last = ""
        for candidate in (port, _free_local_port(), _free_local_port()):
            error = self.connection.forward(candidate, address, port)
            if error is None:
                return candidate
            last = error
        raise HostUnreachable(f"{self.name}: cannot forward a local port to {address}:{port} ({last})")

    def _restore_forwards(self) -> None:
        for (address, port), local in list(self._forwards.items()):
            if self.connection.forward(local, address, port) is not None:
                del self._forwards[(address, port)]  # made again, on another port, when next asked


def _free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
