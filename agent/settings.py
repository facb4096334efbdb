"""The agent's settings: one typed document, each setting in one place, with its default and its meaning.

:mod:`agent.config` fills it from its layers (defaults < file < environment < flags) and validates it
at start, so a bad value anywhere (the policies' sections included) is an error before anything runs.
The sections of the policies and the tools are their own classes (:class:`LlmSettings`,
:class:`RunbookSettings`, :class:`ToolSettings`), composed here. ``agent config show`` prints the
effective values and where each came from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agent.limits import Limits
from agent.policies.llm.settings import LlmSettings
from agent.policies.runbook.settings import RunbookSettings
from tools.base import ToolSettings
from tools.hosts.ssh.settings import HostSettings, SshSettings

PolicyName = Literal["runbook", "scripted", "llm"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class SmtpSettings(Section):
    host: str = "localhost"
    """SMTP server for ``email:`` notifications."""
    port: int = Field(default=25, ge=1, le=65535)
    """Its port (587 for STARTTLS, 465 for TLS)."""
    user: str | None = None
    """Login name; no login when unset."""
    password: SecretStr | None = None
    """Login password (masked everywhere it could appear)."""
    sender: str = "opsloop@localhost"
    """The From address."""
    starttls: bool = False
    """Upgrade the connection with STARTTLS."""
    ssl: bool = False
    """Connect with TLS from the start."""
    timeout_seconds: float = Field(default=10.0, gt=0)
    """Give up on the server after this long."""


class NotifySettings(Section):
    channels: list[str] = Field(default_factory=list)
    """Where notifications go: ``webhook:URL``, ``slack:URL``, ``ntfy:URL``, ``email:ADDRESS``,
    ``command:CMD``, ``desktop``."""
    attempts: int = Field(default=3, ge=1, le=10)
    """Deliveries tried per channel and event, with growing waits."""
    retry_wait_seconds: float = Field(default=1.0, ge=0)
    """First wait between attempts (it doubles, up to 30 s)."""
    timeout_seconds: float = Field(default=10.0, gt=0)
    """Limit for one delivery (HTTP request, command)."""
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    """The mail server for ``email:`` channels."""


class StuckSettings(Section):
    repeat_limit: int = Field(default=3, ge=2)
    """Steps in a row with the same calls and the same results before the policy is nudged."""
    idle_limit: int = Field(default=8, ge=2)
    """Steps in which nothing moved (no change to the document, no new information) before a nudge."""


class AgentConfig(Section):
    policy: PolicyName | None = None
    """Who decides: ``runbook``, ``scripted`` or ``llm``. Unset: ``scripted`` with a script, else ``llm``
    when an API key is set, else ``runbook``."""
    script: str | None = None
    """Decisions file for the scripted policy."""
    sim: str | None = None
    """Run on the simulated host: a built-in scenario name or a scenario file."""
    limits: Limits = Field(default_factory=Limits)
    """Budgets of a new run (a run keeps its own in the state document once started)."""
    notify: NotifySettings = Field(default_factory=NotifySettings)
    """Notifications when a run is blocked, reaches a budget, is done or fails."""
    tools: ToolSettings = Field(default_factory=ToolSettings)
    """What the tools need: the engine interpreter, write roots, output cap, waiting thresholds."""
    stuck: StuckSettings = Field(default_factory=StuckSettings)
    """Repetition and no-progress detection."""
    llm: LlmSettings = Field(default_factory=LlmSettings)
    """The LLM policy: provider, model, server, retries, context bounds."""
    runbook: RunbookSettings | None = None
    """The runbook's benchmark sizes and patience. Unset: its defaults, or short benchmarks on the
    simulated host (whose engines stream in real time)."""
    hosts: list[HostSettings] = Field(default_factory=list)
    """Machines to operate over SSH, node 0 first (``--host``). Empty: the machine the agent runs on."""
    ssh: SshSettings = Field(default_factory=SshSettings)
    """The SSH client: configuration file, control sockets, connect timeout."""


# Environment variables of the configuration and the setting each one sets.
ENVIRONMENT_VARIABLES: dict[str, tuple[str, ...]] = {
    "OPSLOOP_POLICY": ("policy",),
    "OPSLOOP_SCRIPT": ("script",),
    "OPSLOOP_SIM": ("sim",),
    "OPSLOOP_ENGINE_PYTHON": ("tools", "engine_python"),
    "OPSLOOP_SPECFORGE_PYTHON": ("tools", "specforge_python"),
    "OPSLOOP_NOTIFY": ("notify", "channels"),
    "OPSLOOP_MAX_STEPS": ("limits", "max_steps"),
    "OPSLOOP_MAX_WALL_SECONDS": ("limits", "max_wall_seconds"),
    "OPSLOOP_MAX_COST_USD": ("limits", "max_cost_usd"),
    "OPSLOOP_SMTP_HOST": ("notify", "smtp", "host"),
    "OPSLOOP_SMTP_PORT": ("notify", "smtp", "port"),
    "OPSLOOP_SMTP_USER": ("notify", "smtp", "user"),
    "OPSLOOP_SMTP_PASSWORD": ("notify", "smtp", "password"),
    "OPSLOOP_SMTP_FROM": ("notify", "smtp", "sender"),
    "OPSLOOP_SMTP_STARTTLS": ("notify", "smtp", "starttls"),
    "OPSLOOP_SMTP_SSL": ("notify", "smtp", "ssl"),
    "OPSLOOP_LLM_PROVIDER": ("llm", "provider"),
    "OPSLOOP_LLM_MODEL": ("llm", "model"),
    "OPSLOOP_LLM_BASE_URL": ("llm", "base_url"),
    "OPSLOOP_HOSTS": ("hosts",),
    "OPSLOOP_SSH_CONFIG": ("ssh", "config"),
    "OPSLOOP_SSH_CONTROL_DIR": ("ssh", "control_dir"),
}
