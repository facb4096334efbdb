"""The bubblewrap command line for a :class:`Confinement`.

Namespaces: user (all capabilities dropped, so nothing mounted here can be undone from inside), PID
(the command sees and can signal only its own processes), network (its own loopback; see relay.py),
IPC, UTS and cgroup. File system: the host's root read-only, a fresh ``/dev`` (GPU devices added back),
``/proc`` of the new PID namespace, empty ``/tmp`` and ``/run`` (the host's sockets are not reachable),
then the confinement's mounts, parents before children so that a deeper mount is never covered.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tools.hosts.sandbox.confinement import Confinement

RELAY_INSIDE = Path("/run/opsloop-relay")


def namespace_options() -> list[str]:
    return [
        "--unshare-user",
        "--uid",
        str(os.getuid()),
        "--gid",
        str(os.getgid()),
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]


def _base_mounts() -> list[str]:
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for device in sorted(glob.glob("/dev/nvidia*")):
        mounts += ["--dev-bind-try", device, device]
    return mounts


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _interpreter_mounts() -> list[str]:
    """Read-only binds of the agent's interpreter and the relay's code where the empty ``/tmp`` or ``/run``
    would hide them (a checkout or virtual environment under ``/tmp``): the relay runs with them inside."""
    hidden_by_base = (Path("/tmp"), Path("/run"))
    paths = sorted({_real(Path(sys.prefix)), _real(Path(sys.executable)).parent, _real(Path(__file__)).parent})
    mounts: list[str] = []
    for path in paths:
        if path.exists() and any(path.is_relative_to(root) for root in hidden_by_base):
            mounts += ["--ro-bind", str(path), str(path)]
    return mounts


def _mounts(confinement: Confinement) -> list[str]:
    entries: list[tuple[Path, list[str]]] = []
    for path in map(_real, confinement.writable):
        if path.is_dir():
            entries.append((path, ["--bind", str(path), str(path)]))
    for path in map(_real, confinement.hidden):
        if path.is_dir():
            entries.append((path, ["--tmpfs", str(path)]))
        elif path.exists():
            entries.append((path, ["--ro-bind", "/dev/null", str(path)]))
    for path in map(_real, [*confinement.read_only, *confinement.exposed]):
        if path.exists():
            entries.append((path, ["--ro-bind", str(path), str(path)]))
    for path in map(_real, confinement.exposed_writable):
        if path.exists():
            entries.append((path, ["--bind", str(path), str(path)]))
    entries.sort(key=lambda entry: len(entry[0].parts))  # stable: same depth keeps the order above
    return [option for _, options in entries for option in options]


def bwrap_argv(confinement: Confinement, argv: list[str], cwd: Path | None, relay_dir: Path | None) -> list[str]:
    """The full command line: bubblewrap, its mounts, and ``argv`` (behind the loopback relay when needed)."""
    executable = shutil.which("bwrap") or "bwrap"
    command = [executable, *namespace_options(), *_base_mounts(), *_interpreter_mounts(), *_mounts(confinement)]
    if relay_dir is not None:
        command += ["--ro-bind", str(relay_dir), str(RELAY_INSIDE)]
        relay_script = str(Path(__file__).with_name("relay.py").resolve())
        ports = ",".join(map(str, confinement.relay_ports))
        argv = [sys.executable, "-I", relay_script, "--socket-dir", str(RELAY_INSIDE), "--ports", ports, "--", *argv]
    if cwd is not None:
        command += ["--chdir", str(cwd)]
    return [*command, "--", *argv]


@functools.lru_cache(maxsize=1)
def probe_problem() -> str | None:
    """Why no sandbox can run here (None: bubblewrap works). Tried once per process."""
    executable = shutil.which("bwrap")
    if executable is None:
        return "bubblewrap (bwrap) is not installed"
    argv = [executable, *namespace_options(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap did not start: {error}"
    if result.returncode != 0:
        return f"bubblewrap cannot create its namespaces here: {result.stderr.strip()[:300]}"
    return None
