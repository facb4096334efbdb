"""How the operator names remote hosts: ``--host`` values and ``[[hosts]]`` / ``[ssh]`` in ``agent.toml``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tools.hosts.ssh.target import SshTarget


class HostSettings(BaseModel):
    """One machine reached over SSH. A plain string stands for ``{target = "..."}``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    target: str
    """``ssh://[user@]host[:port]`` or a Host alias from the SSH configuration."""
    name: str | None = None
    """What the run calls this host (tool arguments, records, reports). Default: the target."""
    python: str = "python3"
    """A Python 3.8+ interpreter on the host for the agent's helper (the standard library is enough)."""
    working_dir: str | None = None
    """Where the shell starts and relative paths point on the host. Default: the remote home directory."""
    write_roots: list[str] = Field(default_factory=list)
    """Directories on the host patch_file may write in, besides the working directory."""
    remote_dir: str | None = None
    """Where the agent keeps its files on the host: logs of the processes it starts (``runs/<run>/logs``) and
    their exit records (``exits``). Default: ``~/.opsloop`` there."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        return {"target": value} if isinstance(value, str) else value

    @field_validator("target")
    @classmethod
    def _valid_target(cls, value: str) -> str:
        SshTarget.parse(value)
        return value

    @property
    def label(self) -> str:
        return self.name or SshTarget.parse(self.target).label


class SshSettings(BaseModel):
    """The SSH client's settings for every remote host."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    config: str | None = None
    """SSH configuration file. Default: ``$HOME/.ssh/config`` (aliases, User, Port, IdentityFile, ProxyJump,
    UserKnownHostsFile)."""
    control_dir: str | None = None
    """Directory of the shared connections' control sockets. Default: a per-user temporary directory."""
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    """Give up connecting to a host after this long."""
