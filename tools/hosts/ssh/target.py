"""What to reach: ``ssh://[user@]host[:port]`` or a Host alias from the user's SSH configuration, and the options
OpenSSH resolves for it (``ssh -G``) from the configuration file the agent is told to use.

The configuration comes from ``$HOME/.ssh/config`` (or ``--ssh-config FILE``). OpenSSH itself reads the account's
home directory, not ``$HOME``; when the two differ, the file is named with ``-F`` and the defaults that name the
account's home (known hosts, identity files) are moved to ``$HOME`` unless the configuration sets them.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

from tools.hosts.base import HostUnreachable

_URL = re.compile(
    r"^ssh://(?:(?P<user>[^@/\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/@\s\[\]]+)(?::(?P<port>\d{1,5}))?/?$"
)
_PLAIN = re.compile(r"^(?:(?P<user>[^@/\s]+)@)?(?P<host>[A-Za-z0-9_.%+-]+)$")
DEFAULT_IDENTITIES = ("id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_xmss", "id_dsa")


class SshTarget(BaseModel):
    """A host as the user named it. ``alias`` (no port given) lets the SSH configuration decide everything."""

    spec: str
    host: str
    user: str | None = None
    port: int | None = Field(None, ge=1, le=65535)

    @classmethod
    def parse(cls, spec: str) -> SshTarget:
        """``ssh://[user@]host[:port]``, ``[user@]alias``; ValueError with the accepted forms otherwise."""
        text = spec.strip()
        match = _URL.match(text) or _PLAIN.match(text)
        if match is None:
            raise ValueError(
                f"not an SSH host: {spec!r}; use ssh://[user@]host[:port] or a Host alias from ~/.ssh/config"
            )
        groups = match.groupdict()
        port = groups.get("port")
        return cls(spec=text, host=groups["host"].strip("[]"), user=groups["user"], port=int(port) if port else None)

    @property
    def label(self) -> str:
        """A short name for messages and for the run's list of hosts."""
        return self.spec.removeprefix("ssh://").rstrip("/")

    def destination(self) -> list[str]:
        """The arguments naming the host on an ``ssh`` command line."""
        options = ["-p", str(self.port)] if self.port else []
        options += ["-l", self.user] if self.user else []
        return [*options, self.host]


class ResolvedOptions(BaseModel):
    """What OpenSSH will use for the target (the lines of ``ssh -G`` the agent needs)."""

    hostname: str
    user: str
    port: int
    proxyjump: str | None = None
    user_known_hosts: list[str] = Field(default_factory=list)
    strict_host_key_checking: str = "ask"
    identity_files: list[str] = Field(default_factory=list)
    extra_options: list[str] = Field(default_factory=list)  # what the agent adds: -F and $HOME defaults


def account_home() -> str:
    return pwd.getpwuid(os.getuid()).pw_dir


def config_file(explicit: Path | None) -> Path | None:
    """The SSH configuration to name with ``-F``: the one given, else ``$HOME/.ssh/config`` when ``$HOME`` is
    not the account's home (OpenSSH would read the account's); None: let OpenSSH read its default."""
    if explicit is not None:
        return explicit.expanduser()
    home = os.environ.get("HOME")
    if not home or os.path.realpath(home) == os.path.realpath(account_home()):
        return None
    candidate = Path(home) / ".ssh" / "config"
    return candidate if candidate.is_file() else Path(os.devnull)


def _home_defaults(options: dict[str, list[str]]) -> list[str]:
    """``-o`` options that move OpenSSH's account-home defaults to ``$HOME`` (when they differ)."""
    home, account = os.environ.get("HOME", ""), account_home()
    if not home or os.path.realpath(home) == os.path.realpath(account):
        return []
    extra: list[str] = []
    account_default = f"{account}/.ssh/known_hosts {account}/.ssh/known_hosts2"
    if " ".join(options.get("userknownhostsfile", [])) == account_default:
        extra += ["-o", f"UserKnownHostsFile={home}/.ssh/known_hosts {home}/.ssh/known_hosts2"]
    if options.get("identityfile") == [f"~/.ssh/{name}" for name in DEFAULT_IDENTITIES]:
        for name in DEFAULT_IDENTITIES:
            if (Path(home) / ".ssh" / name).is_file():
                extra += ["-o", f"IdentityFile={home}/.ssh/{name}"]
    return extra


def resolve(target: SshTarget, explicit_config: Path | None = None, timeout: float = 10.0) -> ResolvedOptions:
    """Run ``ssh -G`` for the target; HostUnreachable when OpenSSH rejects the configuration or the name."""
    named = config_file(explicit_config)
    file_option = ["-F", str(named)] if named is not None else []
    try:
        completed = subprocess.run(
            ["ssh", *file_option, "-G", *target.destination()],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HostUnreachable(f"cannot run OpenSSH's ssh to resolve {target.label}: {error}") from None
    if completed.returncode != 0:
        detail = completed.stderr.strip().splitlines()[-1:] or ["no detail"]
        raise HostUnreachable(f"the SSH configuration does not resolve {target.label}: {detail[0]}")
    options: dict[str, list[str]] = {}
    for line in completed.stdout.splitlines():
        key, _, value = line.partition(" ")
        options.setdefault(key.lower(), []).append(value)
    proxy = options.get("proxyjump", [None])[0]
    return ResolvedOptions(
        hostname=options["hostname"][0],
        user=options["user"][0],
        port=int(options["port"][0]),
        proxyjump=proxy if proxy not in (None, "none") else None,
        user_known_hosts=" ".join(options.get("userknownhostsfile", [])).split(),
        strict_host_key_checking=options.get("stricthostkeychecking", ["ask"])[0],
        identity_files=options.get("identityfile", []),
        extra_options=file_option + _home_defaults(options),
    )
