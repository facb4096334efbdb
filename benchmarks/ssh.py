"""What a tool call costs over SSH, first and after, and what tailing a multi-GB log on the remote host costs.

The remote host is real: a node of ``twin.cluster`` (a network namespace with its own sshd, reached over a veth
pair), so every call crosses a real OpenSSH connection. The local reference is the same tool on the local host,
on the same files (the namespace shares the file system), in the same run.

- ``first``: a tool call from a new agent process (a new ``SshHost``): with the shared connection still up
  (ControlMaster, as between two ``agent`` commands), with no connection (SSH handshake included), and once with
  the helper not yet installed on the host.
- ``next``: later calls on the same host object (one request over the open helper session).
- ``cli``: a whole ``agent tool tail_log`` command, local and with ``--host``.
- ``log``: ``tail_log`` (200 lines) and ``diagnose_log`` on a ``--log-gb`` log and on a 5 MB one.

Needs root, iproute2 and openssh-server; otherwise it prints a line saying why it was skipped.

    python -m benchmarks.ssh --log-gb 5 --calls 30
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.state import ProjectState
from agent.store import StateStore
from benchmarks.common import emit, machine, note, percentile, ratio, summary_ms
from benchmarks.log_files import write_log
from tools.base import ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.base import Host
from tools.hosts.local import LocalHost
from tools.hosts.remote.bundle import build
from tools.hosts.ssh.host import SshHost
from tools.hosts.ssh.target import SshTarget
from twin.cluster.build import Cluster, up
from twin.cluster.network import ClusterUnavailable
from twin.loader import load_scenario

REGISTRY = default_registry()
RUN_ID = "bench"  # the logs sit in this run's log directory on the node, where tail_log may read them


def log_dir(cluster: Cluster) -> Path:
    """The run's log directory on node 0 (the nodes share this machine's file system)."""
    return cluster.directory / "remote" / "runs" / RUN_ID / "logs"


def median(values: list[float]) -> float:
    return percentile(values, 0.5)


def compare(there: list[float], here: list[float]) -> dict[str, Any]:
    """Both summaries, the ratio of the medians, and what SSH adds to the median."""
    added = round((median(there) - median(here)) * 1000, 2)
    return {"local": summary_ms(here), "ssh": summary_ms(there), "ratio": ratio(median(there), median(here)),
            "added_ms": added}  # fmt: skip


def timed(action: Callable[[], object], repeats: int) -> list[float]:
    durations = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        durations.append(time.perf_counter() - started)
    return durations


def call(host: Host, tool: str, arguments: dict[str, Any], scratch: Path) -> None:
    logs = Path(str(arguments.get("path", scratch))).parent  # a configured log directory for the local host
    context = ToolContext(
        state=ProjectState(goal="bench", run_id=RUN_ID),
        state_dir=scratch,
        host=host,
        settings=ToolSettings(readable_log_dirs=[logs]),
    )
    result = REGISTRY.execute(tool, arguments, context)
    if not result.ok:
        raise RuntimeError(f"{tool} failed: {result.error}")


def remote(cluster: Cluster, control: Path) -> SshHost:
    return SshHost(
        SshTarget.parse("node0"),
        ssh_config=cluster.home / ".ssh" / "config",
        control_dir=control,
        python="/usr/bin/python3",
        run_id=RUN_ID,
        remote_dir=str(cluster.directory / "remote"),
    )


def first_calls(cluster: Cluster, control: Path, scratch: Path, log: Path, repeats: int) -> dict[str, Any]:
    tail = {"path": str(log), "lines": 200}
    helper = Path.home() / ".cache" / "opsloop" / build().file_name  # the nodes share this machine's home
    helper.unlink(missing_ok=True)
    remote(cluster, control).connection.close_master()
    installing = timed(lambda: call(remote(cluster, control), "tail_log", tail, scratch), 1)
    cold: list[float] = []
    for _ in range(max(repeats // 5, 3)):
        remote(cluster, control).connection.close_master()
        cold += timed(lambda: call(remote(cluster, control), "tail_log", tail, scratch), 1)
    warm = timed(lambda: call(remote(cluster, control), "tail_log", tail, scratch), repeats)
    return {"helper_install_ms": round(installing[0] * 1000, 1), "no_connection": summary_ms(cold),
            "connection_up": summary_ms(warm)}  # fmt: skip


def cli_calls(cluster: Cluster, control: Path, scratch: Path, log: Path, repeats: int) -> dict[str, Any]:
    environment = {"HOME": str(cluster.home), "OPSLOOP_SSH_CONTROL_DIR": str(control), "PATH": "/usr/bin:/bin"}
    arguments = ["--args", f'{{"path": "{log}", "lines": 200}}']
    local = [sys.executable, "-m", "agent", "tool", "tail_log", *arguments, "--state-dir", str(scratch / "cli-local")]
    over = [sys.executable, "-m", "agent", "tool", "tail_log", *arguments, "--state-dir", str(scratch / "cli-ssh"),
            "--host", "node0"]  # fmt: skip
    (scratch / "cli-local").mkdir(exist_ok=True)
    (scratch / "cli-local" / "agent.toml").write_text(f'[tools]\nreadable_log_dirs = ["{log.parent}"]\n')
    (scratch / "cli-ssh").mkdir(exist_ok=True)
    (scratch / "cli-ssh" / "agent.toml").write_text(
        f'[[hosts]]\ntarget = "node0"\npython = "/usr/bin/python3"\nremote_dir = "{cluster.directory / "remote"}"\n'
    )
    store = StateStore(scratch / "cli-ssh")  # a state whose run has the log directory the logs are in
    store.save(ProjectState(goal="direct tool calls", run_id=RUN_ID))
    store.close()

    def run(argv: list[str]) -> None:
        subprocess.run(argv, capture_output=True, env=environment, check=True, cwd=scratch)

    local_seconds, ssh_seconds = timed(lambda: run(local), repeats), timed(lambda: run(over), repeats)
    return compare(ssh_seconds, local_seconds)


def measure(cluster: Cluster, scratch: Path, log_gb: float, repeats: int) -> dict[str, Any]:
    control = Path(tempfile.mkdtemp(prefix="opsloop-cm-", dir="/tmp"))
    log_dir(cluster).mkdir(parents=True, exist_ok=True)
    big, small = log_dir(cluster) / "big.log", log_dir(cluster) / "small.log"
    note(f"writing a {log_gb} GB log")
    big_size, small_size = write_log(big, int(log_gb * 1e9)), write_log(small, 5 * 10**6)
    local, ssh = LocalHost(exit_dir=scratch / "exits"), remote(cluster, control)
    try:
        result: dict[str, Any] = {"first": first_calls(cluster, control, scratch, small, repeats)}
        for name, tool, arguments in (("shell_true", "shell", {"command": "true"}),
                                      ("tail_small", "tail_log", {"path": str(small), "lines": 200})):  # fmt: skip
            here = timed(lambda tool=tool, arguments=arguments: call(local, tool, arguments, scratch), repeats)
            there = timed(lambda tool=tool, arguments=arguments: call(ssh, tool, arguments, scratch), repeats)
            result[f"next_{name}"] = compare(there, here)
        for name, tool, arguments in (("tail_big", "tail_log", {"path": str(big), "lines": 200}),
                                      ("diagnose_big", "diagnose_log", {"path": str(big)})):  # fmt: skip
            few = max(repeats // 3, 3)
            here = timed(lambda tool=tool, arguments=arguments: call(local, tool, arguments, scratch), few)
            there = timed(lambda tool=tool, arguments=arguments: call(ssh, tool, arguments, scratch), few)
            result[name] = compare(there, here)
        result["cli_tail_small"] = cli_calls(cluster, control, scratch, small, max(repeats // 3, 3))
        result["log_bytes"] = {"big": big_size, "small": small_size}
        return result
    finally:
        ssh.close(end_connection=True)
        shutil.rmtree(control, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ssh", description=__doc__.split("\n\n")[0])
    parser.add_argument("--log-gb", type=float, default=5.0)
    parser.add_argument("--calls", type=int, default=30)
    parsed = parser.parse_args(argv)
    scenario, _ = load_scenario("dsv3-2x8-h100")
    with tempfile.TemporaryDirectory(prefix="opsloop-bench-ssh-") as scratch:
        try:
            cluster = up(scenario, Path(scratch) / "cluster")
        except (ClusterUnavailable, OSError) as error:
            emit({"benchmark": "ssh", "machine": machine(), "skipped": str(error)})
            return 0
        try:
            figures = measure(cluster, Path(scratch), parsed.log_gb, parsed.calls)
        finally:
            cluster.down()
    emit({"benchmark": "ssh", "machine": machine(), "calls": parsed.calls, **figures})
    return 0


if __name__ == "__main__":
    sys.exit(main())
