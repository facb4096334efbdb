"""Keys, one OpenSSH server per node (inside its namespace), and the client's home with an SSH configuration
naming every node by an alias, with its host key in known_hosts."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from twin.cluster.network import ClusterUnavailable, Node

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def keygen(path: Path) -> str:
    """A new ed25519 key pair at ``path``; returns the public key line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, capture_output=True)
    return path.with_suffix(".pub").read_text().strip()


def _config(node: Node, directory: Path, authorized: Path, session_environment: Mapping[str, str]) -> str:
    pairs = " ".join(f"{name}={value}" for name, value in session_environment.items())
    return "\n".join(
        [
            *([f"SetEnv {pairs}"] if pairs else []),  # one line: sshd keeps the first SetEnv it reads
            f"ListenAddress {node.address}",
            "Port 22",
            f"HostKey {directory / 'host_key'}",
            f"PidFile {directory / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "MaxSessions 64",
            "MaxStartups 64",
            "LogLevel ERROR",
            "",
        ]
    )


def start(node: Node, directory: Path, authorized: Path, session_environment: Mapping[str, str] | None = None) -> int:
    """Start sshd in the node's namespace; returns its pid once it listens. Every session it starts has
    ``session_environment`` (names and values without spaces or quotes) in its environment."""
    environment = dict(session_environment or {})
    for name, value in environment.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or re.search(r"[\s\"'\\]", value):
            raise ValueError(f"sshd cannot pass on {name}={value!r}: a name, and a value without spaces or quotes")
    directory.mkdir(parents=True, exist_ok=True)
    keygen(directory / "host_key")
    (directory / "sshd_config").write_text(_config(node, directory, authorized, environment))
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
    command = [SSHD, "-f", str(directory / "sshd_config"), "-E", str(directory / "sshd.log")]
    completed = subprocess.run(["ip", "netns", "exec", node.namespace, *command], capture_output=True, text=True)
    if completed.returncode != 0:
        raise ClusterUnavailable(f"sshd did not start on node {node.index}: {completed.stderr.strip()}")
    pid_file = directory / "sshd.pid"
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise ClusterUnavailable(f"sshd on node {node.index} wrote no pid file ({(directory / 'sshd.log').read_text()})")


def stop(pid: int, directory: Path) -> None:
    """SIGTERM the node's server, but only while ``pid`` is still that server (its command line names the node's
    configuration): a server that already ended leaves its pid free for any process on the machine."""
    try:
        descriptor = os.pidfd_open(pid)
    except OSError:
        return
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        if str(directory / "sshd_config") in command_line:
            signal.pidfd_send_signal(descriptor, signal.SIGTERM)
    except OSError:
        return
    finally:
        os.close(descriptor)


def host_key_line(directory: Path) -> str:
    return (directory / "host_key.pub").read_text().strip()


def write_client_home(home: Path, nodes: list[Node], identity: Path, node_dirs: list[Path]) -> list[str]:
    """``home/.ssh/config`` with an alias per node (``node0``, ``node1``, ...) and their keys in known_hosts;
    returns the aliases."""
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True, mode=0o700)
    known = ssh / "known_hosts"
    known.write_text(
        "".join(f"{node.address} {host_key_line(path)}\n" for node, path in zip(nodes, node_dirs, strict=True))
    )
    blocks = [
        f"Host node{node.index}\n  HostName {node.address}\n  User root\n  IdentityFile {identity}\n"
        f"  UserKnownHostsFile {known}\n  IdentitiesOnly yes\n"
        for node in nodes
    ]
    (ssh / "config").write_text("\n".join(blocks))
    return [f"node{node.index}" for node in nodes]
