"""The local machine as a :class:`Host`.

- ``run`` starts the command in its own process group and kills the whole group on timeout; output is
  capped (head and tail kept, a marker in between): :mod:`tools.hosts.command`, shared with remote hosts. With a
  :class:`Confinement` the command runs in the sandbox (:mod:`tools.hosts.sandbox`), without the variables whose
  names say they hold secrets.
- ``spawn`` starts the supervisor (``tools.hosts.supervise``) detached (new session, so it leads the group);
  the supervisor runs the command with stdout and stderr appended to the log and writes the exit code into
  ``exit_dir`` so it stays readable after the agent restarts.
- ``status``/``signal_group`` act only when psutil confirms (pid, create_time): a reused PID never matches.
- GPU facts come from NVML (:mod:`tools.hosts.nvml`).

Subclasses (the simulated host) override ``probe_gpus``, ``gpu_memory_used_mib`` and ``translate``.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import psutil

from tools.hosts import nvml, supervise
from tools.hosts.base import CommandResult, GpuProbe, Host, MarkedProcess, ProcessStatus, SpawnedProcess
from tools.hosts.command import run_command
from tools.hosts.local_files import LocalFiles
from tools.hosts.sandbox import Confinement, confined
from tools.hosts.sandbox.run import confined_environment

CREATE_TIME_TOLERANCE = 1e-3  # psutil derives create_time from clock ticks; the same process reads the same


def default_exit_dir() -> Path:
    """Per-user directory where supervisors leave exit records; stable across agent restarts."""
    return Path(tempfile.gettempdir()) / f"opsloop-{os.getuid()}" / "exits"


class LocalHost(LocalFiles, Host):
    name = "local"

    def __init__(self, exit_dir: Path | None = None) -> None:
        self.exit_dir = exit_dir or default_exit_dir()
        # Supervisors started by this object and not yet waited for, and the exit codes of those reaped.
        self._unreaped: set[int] = set()
        self._reaped: dict[int, int] = {}

    # -- commands ------------------------------------------------------------------------------------

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
        environment = {**os.environ, **(env or {})}
        if confinement is None:
            return self._execute(argv, argv, timeout, cwd, environment, input_text, output_cap_bytes)
        with confined(confinement, argv, cwd) as (command, _):
            return self._execute(
                argv, command, timeout, cwd, confined_environment(environment), input_text, output_cap_bytes
            )

    @staticmethod
    def _execute(
        argv: list[str],
        command: list[str],
        timeout: float,
        cwd: Path | None,
        environment: dict[str, str],
        input_text: str | None,
        output_cap_bytes: int,
    ) -> CommandResult:
        """Run ``command`` (``argv`` itself, or ``argv`` confined) in its own process group."""
        completed = run_command(
            command,
            timeout=timeout,
            cwd=None if cwd is None else str(cwd),
            environment=environment,
            input_bytes=None if input_text is None else input_text.encode(),
            output_cap_bytes=output_cap_bytes,
        )
        return CommandResult(
            argv=argv,
            exit_code=completed.exit_code,
            stdout=completed.stdout,
            stderr=completed.stderr,
            timed_out=completed.timed_out,
            duration_seconds=completed.duration_seconds,
        )

    # -- managed processes ---------------------------------------------------------------------------

    def supervisor_argv(self, argv: list[str], cwd: Path | None = None) -> list[str]:
        location = ["--cwd", str(cwd)] if cwd is not None else []
        # -P: the working directory (which may hold a package named like ours) is not put on the path.
        return [
            sys.executable,
            "-P",
            "-m",
            "tools.hosts.supervise",
            "--exit-dir",
            str(self.exit_dir),
            *location,
            "--",
            *argv,
        ]

    def spawn(self, argv: list[str], *, env: dict[str, str], log_path: Path, cwd: Path | None = None) -> SpawnedProcess:
        if not argv:
            raise ValueError("spawn needs a command")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.exit_dir.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        stdin_fd = os.open(os.devnull, os.O_RDONLY)
        try:
            # posix_spawn rather than Popen: the supervisor is meant to outlive this object, and a
            # new session makes it the leader of the process group that stop signals target.
            pid = os.posix_spawn(
                sys.executable,
                self.supervisor_argv(argv, cwd),
                {**os.environ, **env},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin_fd, 0),
                    (os.POSIX_SPAWN_DUP2, log_fd, 1),
                    (os.POSIX_SPAWN_DUP2, log_fd, 2),
                ],
                setsid=True,
            )
        finally:
            os.close(log_fd)
            os.close(stdin_fd)
        self._unreaped.add(pid)
        return SpawnedProcess(pid=pid, create_time=psutil.Process(pid).create_time())

    def _reap(self, pid: int) -> None:
        """Collect the exit status of a supervisor this object started, so it never lingers as a zombie.

        Safe without an identity check: an unreaped child's PID cannot have been reused.
        """
        if pid not in self._unreaped:
            return
        try:
            done, wait_status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            self._unreaped.discard(pid)
            return
        if done == pid:
            self._unreaped.discard(pid)
            self._reaped[pid] = os.waitstatus_to_exitcode(wait_status)

    def _identify(self, pid: int, create_time: float) -> psutil.Process | None:
        """The live process with this identity (zombies included), or None."""
        self._reap(pid)
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - create_time) > CREATE_TIME_TOLERANCE:
                return None
            return process
        except psutil.NoSuchProcess:
            return None

    def _exit_code(self, pid: int, create_time: float) -> int | None:
        record = supervise.read_exit_record(self.exit_dir, pid, create_time)
        if record is not None and isinstance(record.get("exit_code"), int):
            exit_code = record["exit_code"]
            assert isinstance(exit_code, int)
            return exit_code
        # No record: the supervisor itself was killed (e.g. SIGKILL to the group); only its parent knows.
        return self._reaped.get(pid)

    def status(self, pid: int, create_time: float) -> ProcessStatus:
        process = self._identify(pid, create_time)
        if process is None or _is_zombie(process):
            reused = process is None and psutil.pid_exists(pid)
            return ProcessStatus(alive=False, identity_matches=not reused, exit_code=self._exit_code(pid, create_time))
        return _tree_counters(process)

    def signal_group(self, pid: int, create_time: float, signum: int = signal.SIGTERM) -> bool:
        process = self._identify(pid, create_time)
        if process is None:
            return False
        try:
            if os.getpgid(pid) != pid:
                return False  # not the group leader we started; never signal someone else's group
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def group_members(self, pgid: int, variable: str) -> list[MarkedProcess]:
        return _marked_processes(variable, lambda pid: os.getpgid(pid) == pgid)

    def signal_process(self, pid: int, create_time: float, signum: int) -> bool:
        process = self._identify(pid, create_time)
        if process is None:
            return False
        try:
            process.send_signal(signum)
        except psutil.Error:
            return False
        return True

    def find_marked(self, variable: str) -> list[MarkedProcess]:
        # spawned processes lead their own session; their children inherit the marker
        return _marked_processes(variable, lambda pid: os.getsid(pid) == pid)

    # -- GPUs ----------------------------------------------------------------------------------------

    def probe_gpus(self) -> GpuProbe:
        return nvml.probe_gpus()

    def gpu_memory_used_mib(self) -> list[int] | None:
        return nvml.memory_used_mib()


def _is_zombie(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _tree_counters(leader: psutil.Process) -> ProcessStatus:
    """CPU, I/O and memory summed over the supervisor and every descendant (the engine's workers).

    ``read_bytes``/``write_bytes`` use read_chars/write_chars where available: reads served from the page
    cache count too, which is what matters when telling a weight load from a hang.
    """
    cpu_seconds = 0.0
    read_bytes = write_bytes = rss_bytes = 0
    io_seen = False
    try:
        members = [leader, *leader.children(recursive=True)]
    except psutil.Error:
        members = [leader]
    for member in members:
        try:
            with member.oneshot():
                times = member.cpu_times()
                cpu_seconds += times.user + times.system + times.children_user + times.children_system
                rss_bytes += member.memory_info().rss
                try:
                    counters = member.io_counters()
                except (psutil.AccessDenied, AttributeError):
                    continue
                io_seen = True
                read_bytes += getattr(counters, "read_chars", counters.read_bytes)
                write_bytes += getattr(counters, "write_chars", counters.write_bytes)
        except psutil.Error:
            continue
    return ProcessStatus(
        alive=True,
        cpu_seconds=cpu_seconds,
        rss_bytes=rss_bytes,
        read_bytes=read_bytes if io_seen else None,
        write_bytes=write_bytes if io_seen else None,
    )


def _marked_processes(variable: str, belongs: Callable[[int], bool]) -> list[MarkedProcess]:
    """Live processes for which ``belongs(pid)`` holds and whose environment sets ``variable``."""
    found = []
    for process in psutil.process_iter(["pid", "create_time", "cmdline"]):
        try:
            if not belongs(process.pid) or _is_zombie(process):
                continue
            value = process.environ().get(variable)
        except (psutil.Error, OSError):
            continue
        if value is not None:
            argv = process.info["cmdline"] or []
            created = process.info["create_time"]
            found.append(MarkedProcess(pid=process.pid, create_time=created, value=value, argv=argv))
    return found
