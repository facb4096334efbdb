"""Real OpenSSH servers for the SSH and multi-node tests: a scenario's nodes as network namespaces (``twin.cluster``),
each with its own address and sshd on a generated host key, torn down afterwards (also when the test fails).

Needs root, iproute2, openssh-server and a kernel that lets this machine make network namespaces, veth pairs and
bridges (``.ci/run`` installs the packages). Where one of those is missing, the tests that use it are skipped with
the reason; where all are there, a cluster that cannot be built is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.cli import agent_environment
from support.run_mark import run_environment
from tools.hosts.ssh.host import SshHost
from tools.hosts.ssh.target import SshTarget
from twin.cluster.build import Cluster, up
from twin.cluster.network import ClusterUnavailable
from twin.loader import load_scenario


def unavailable() -> str | None:
    """Why namespaced sshd hosts cannot be built here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for program in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        return "sshd (openssh-server) is not installed"
    return _kernel_problem()


def _kernel_problem() -> str | None:
    """Why this kernel (or container) cannot make what a cluster is built of, found by making each once."""
    name = f"opsprobe{os.getpid() % 100000}"  # with a suffix, within 15 characters (an interface name)
    steps = [
        ("a network namespace", ["ip", "netns", "add", name], ["ip", "netns", "delete", name]),
        ("a veth pair", ["ip", "link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b"],
         ["ip", "link", "delete", f"{name}a"]),
        ("a bridge", ["ip", "link", "add", f"{name}br", "type", "bridge"], ["ip", "link", "delete", f"{name}br"]),
    ]  # fmt: skip
    for what, make, remove in steps:
        made = subprocess.run(make, capture_output=True, text=True, check=False)
        if made.returncode != 0:
            return f"this machine cannot make {what} ({' '.join(make)}: {made.stderr.strip()})"
        subprocess.run(remove, capture_output=True, check=False)
    return None


@dataclass
class NamespacedNodes:
    cluster: Cluster
    control_dir: Path  # short, so that control socket paths stay within the limit

    @property
    def remote_dir(self) -> Path:
        """Where the agent keeps its files on the nodes (they share this machine's file system)."""
        return self.cluster.directory / "remote"

    def write_agent_toml(self, state_dir: Path) -> None:
        """Describe the nodes in ``state_dir/agent.toml`` (helper interpreter, files under the test's directory), so
        ``--host node0`` on the command line picks those settings up."""
        state_dir.mkdir(parents=True, exist_ok=True)
        entries = "".join(
            f'[[hosts]]\ntarget = "{alias}"\npython = "/usr/bin/python3"\nremote_dir = "{self.remote_dir}"\n\n'
            for alias in self.aliases
        )
        (state_dir / "agent.toml").write_text(entries + "[ssh]\nconnect_timeout_seconds = 30\n")

    @property
    def ssh_config(self) -> Path:
        return self.cluster.home / ".ssh" / "config"

    @property
    def aliases(self) -> list[str]:
        return self.cluster.aliases

    def host(self, index: int, control_dir: Path | None = None, write_roots: list[str] | None = None) -> SshHost:
        """An SSH host for node ``index``, as the agent builds it."""
        return SshHost(
            SshTarget.parse(self.aliases[index]),
            ssh_config=self.ssh_config,
            control_dir=control_dir or self.control_dir,
            python="/usr/bin/python3",
            run_id="tests",
            remote_dir=str(self.remote_dir),
            write_roots=write_roots,
            connect_timeout=30,
        )

    def environment(self) -> dict[str, str]:
        """The environment for an ``agent`` subprocess that reaches the nodes by their aliases."""
        return agent_environment(HOME=str(self.cluster.home), OPSLOOP_SSH_CONTROL_DIR=str(self.control_dir))

    def end_connections(self, control_dir: Path | None = None) -> None:
        """End the shared SSH connections made through ``control_dir`` (the tests' own ssh processes)."""
        directory = control_dir or self.control_dir
        for alias in self.aliases:
            subprocess.run(
                ["ssh", "-F", str(self.ssh_config), "-o", f"ControlPath={directory}/%C", "-O", "exit", alias],
                capture_output=True,
                timeout=15,
                check=False,
            )


@contextmanager
def namespaced_cluster(scenario: str, directory: Path) -> Iterator[NamespacedNodes]:
    """The scenario's nodes, up for the duration of the block."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    loaded, _ = load_scenario(scenario)
    try:
        cluster = up(loaded, directory, session_environment=run_environment())
    except ClusterUnavailable as error:  # the facilities are there (checked above): this is a defect
        pytest.fail(f"the namespaced hosts could not be built: {error}")
    control_dir = Path(tempfile.mkdtemp(prefix="opsloop-cm-", dir="/tmp"))
    handle = NamespacedNodes(cluster, control_dir)
    try:
        yield handle
    finally:
        handle.end_connections()
        cluster.down()
        shutil.rmtree(control_dir, ignore_errors=True)
