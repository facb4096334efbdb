"""One shared SSH connection per host: OpenSSH's ControlMaster, kept for a while after the agent exits.

Why OpenSSH's client rather than a Python SSH library: it is the client the user's configuration is written
for (aliases, ProxyJump, Match blocks, certificates, hardware keys, GSSAPI, the agent), it checks host keys
against their known_hosts exactly as their own ``ssh`` does, and its ControlMaster multiplexes every session
and port forward over one authenticated connection, so after the first call a new session costs one round
trip. It needs no new dependency.

Host keys: ``BatchMode=yes`` (the agent cannot type), and ``StrictHostKeyChecking=yes`` unless the user's
configuration says ``accept-new`` (which still refuses a changed key). A changed or unknown key is therefore
never accepted by the agent: it becomes a question to the human with the fingerprint OpenSSH reported.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from tools.hosts.base import HostUnreachable
from tools.hosts.ssh.target import ResolvedOptions, SshTarget, resolve

PERSIST_SECONDS = 600
_FINGERPRINT = re.compile(r"(SHA256:[A-Za-z0-9+/=]+)")


def default_control_dir() -> Path:
    """Per-user directory for the control sockets (short, so the socket path stays within the OS limit)."""
    return Path(tempfile.gettempdir()) / f"opsloop-{os.getuid()}" / "ssh"


class HostKeyRefused(HostUnreachable):
    """The host's key is not the one the user's known_hosts holds (changed), or it is not there (unknown)."""


def classify(target: SshTarget, stderr: str) -> HostUnreachable:
    """Turn OpenSSH's complaint into the matching exception, with what the human can do about it."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    fingerprint = next((match.group(1) for line in lines if (match := _FINGERPRINT.search(line))), None)
    known = [line for line in lines if "known_hosts" in line or "Offending" in line or "fingerprint" in line.lower()]
    evidence = [f"host: {target.label}", *known[:6]] + ([f"the key it offered: {fingerprint}"] if fingerprint else [])
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "Offending" in stderr:
        return HostKeyRefused(
            f"the host key of {target.label} changed; the agent will not connect until a person has checked it",
            needs_human=True,
            evidence=evidence,
            options=["retry after verifying the new key and updating known_hosts (ssh-keygen -R HOST)", "stop here"],
        )
    if "Host key verification failed" in stderr or ("No " in stderr and "host key is known" in stderr):
        return HostKeyRefused(
            f"the host key of {target.label} is not in known_hosts; the agent does not accept keys on its own",
            needs_human=True,
            evidence=evidence,
            options=[
                "retry after adding the verified key to known_hosts (ssh-keyscan, or one ssh by hand)",
                "stop here",
            ],
        )
    reason = lines[-1] if lines else "ssh exited without a message"
    if "Permission denied" in stderr:
        return HostUnreachable(f"{target.label} refused the login ({reason}); check the user, key and ssh-agent")
    return HostUnreachable(f"cannot reach {target.label}: {reason}")


class SshConnection:
    """The ``ssh`` command lines for one host, sharing one ControlMaster connection."""

    def __init__(
        self,
        target: SshTarget,
        *,
        ssh_config: Path | None = None,
        control_dir: Path | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self.target, self.ssh_config = target, ssh_config
        self.control_dir = control_dir or default_control_dir()
        self.connect_timeout = connect_timeout
        self._resolved: ResolvedOptions | None = None

    @property
    def resolved(self) -> ResolvedOptions:
        """What OpenSSH resolves for the target (asked once)."""
        if self._resolved is None:
            self._resolved = resolve(self.target, self.ssh_config)
        return self._resolved

    def options(self) -> list[str]:
        """Options for every command: the shared connection, keep-alives, and host keys always checked."""
        self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        checking = "accept-new" if self.resolved.strict_host_key_checking == "accept-new" else "yes"
        settings = {
            "BatchMode": "yes",
            "StrictHostKeyChecking": checking,
            "ControlMaster": "auto",
            "ControlPath": str(self.control_dir / "%C"),
            "ControlPersist": str(PERSIST_SECONDS),
            "ServerAliveInterval": "5",
            "ServerAliveCountMax": "3",
            "ConnectTimeout": str(int(self.connect_timeout)),
            "LogLevel": "ERROR",
        }
        return [
            *self.resolved.extra_options,
            *(item for key, value in settings.items() for item in ("-o", f"{key}={value}")),
        ]

    def command(self, remote_command: str) -> list[str]:
        """``ssh`` running ``remote_command`` (a shell command line on the host) over the shared connection."""
        return ["ssh", *self.options(), *self.target.destination(), remote_command]

    def control(self, operation: str, *extra: str, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
        """``ssh -O operation`` on the shared connection (check, forward, cancel, exit)."""
        argv = ["ssh", *self.options(), "-O", operation, *extra, *self.target.destination()]
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )

    def forward(self, local_port: int, remote_address: str, remote_port: int) -> str | None:
        """Forward 127.0.0.1:local_port here to remote_address:remote_port as the host sees it; None or the error."""
        spec = f"127.0.0.1:{local_port}:{remote_address}:{remote_port}"
        completed = self.control("forward", "-L", spec)
        return (
            None
            if completed.returncode == 0
            else (completed.stderr.strip() or f"ssh -O forward exit {completed.returncode}")
        )

    def master_running(self) -> bool:
        return self.control("check").returncode == 0

    def close_master(self) -> None:
        """End the shared connection (its sessions and forwards end with it); nothing if none runs."""
        self.control("exit")
