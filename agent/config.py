"""The agent's configuration: one typed document merged from layers.

Layers, later ones win: built-in defaults < the config file (``--config FILE``, else ``agent.toml``
in the state directory, if present) < environment variables (``OPSLOOP_*``, listed in
:data:`ENVIRONMENT_VARIABLES`) < command-line flags. A bad value is reported in one line naming the
field and the layer it came from. Secrets (SMTP password, API keys) are registered with the redactor
as soon as they are read, so they are masked wherever they might appear.

Example ``agent.toml``::

    policy = "runbook"
    [limits]
    max_steps = 400
    [notify]
    channels = ["ntfy:https://ntfy.example/opsloop", "email:oncall@example.com"]
    [notify.smtp]
    host = "smtp.example.com"
    port = 587
    starttls = true
    [llm]
    provider = "openai"
    base_url = "http://127.0.0.1:30000/v1"
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agent.events import UsageError
from tools.mappings import merge
from tools.redact import register_secret

PolicyName = Literal["runbook", "scripted", "llm"]
CONFIG_FILE_NAME = "agent.toml"
LLM_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LimitSettings(Section):
    max_steps: int = Field(default=200, ge=1)
    max_wall_seconds: float = Field(default=6 * 3600.0, gt=0)
    max_cost_usd: float = Field(default=50.0, ge=0)


class SmtpSettings(Section):
    host: str = "localhost"
    port: int = Field(default=25, ge=1, le=65535)
    user: str | None = None
    password: SecretStr | None = None
    sender: str = "opsloop@localhost"
    starttls: bool = False
    ssl: bool = False
    timeout_seconds: float = Field(default=10.0, gt=0)


class NotifySettings(Section):
    """``channels`` are specs: ``webhook:URL``, ``slack:URL``, ``ntfy:URL``, ``email:ADDRESS``,
    ``command:CMD``, ``desktop``. Each delivery is tried ``attempts`` times with growing waits."""

    channels: list[str] = Field(default_factory=list)
    attempts: int = Field(default=3, ge=1, le=10)
    retry_wait_seconds: float = Field(default=1.0, ge=0)
    timeout_seconds: float = Field(default=10.0, gt=0)
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)


class ToolSettingsConfig(Section):
    engine_python: str | None = None  # interpreter of the engine environment; default: this one
    allowed_write_roots: list[str] = Field(default_factory=list)  # besides the working directory
    output_cap_chars: int = Field(default=8_000, ge=200)
    load_timeout_seconds: float = Field(default=1800.0, gt=0)
    hang_after_seconds: float = Field(default=600.0, gt=0)


class StuckSettings(Section):
    repeat_limit: int = Field(default=3, ge=2)
    idle_limit: int = Field(default=8, ge=2)


class AgentConfig(Section):
    policy: PolicyName | None = None  # None: llm when an API key is set, else runbook
    script: str | None = None  # decisions file for the scripted policy
    sim: str | None = None  # simulated-host scenario (name or file)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    tools: ToolSettingsConfig = Field(default_factory=ToolSettingsConfig)
    stuck: StuckSettings = Field(default_factory=StuckSettings)
    # The policies' own sections, validated by each policy when it is built (the LLM policy's by
    # agent.policies.llm.settings.LlmSettings), so this module does not depend on them.
    llm: dict[str, Any] = Field(default_factory=dict)
    runbook: dict[str, Any] = Field(default_factory=dict)


ENVIRONMENT_VARIABLES: dict[str, tuple[str, ...]] = {
    "OPSLOOP_POLICY": ("policy",),
    "OPSLOOP_SCRIPT": ("script",),
    "OPSLOOP_SIM": ("sim",),
    "OPSLOOP_ENGINE_PYTHON": ("tools", "engine_python"),
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
}


def load_config(state_dir: Path, config_file: Path | None = None, environ: Mapping[str, str] | None = None,
                overrides: Mapping[str, Any] | None = None) -> AgentConfig:
    """Merge the layers and validate. Raises :class:`UsageError` with a one-line message."""
    layers: list[tuple[str, Mapping[str, Any]]] = []
    path = config_file if config_file is not None else state_dir / CONFIG_FILE_NAME
    if config_file is not None or path.exists():
        layers.append((f"config file {path}", read_config_file(path)))
    layers.append(("environment", environment_layer(os.environ if environ is None else environ)))
    layers.append(("command line", overrides or {}))
    merged: dict[str, Any] = {}
    for _, layer in layers:
        merged = merge(merged, layer)
    try:
        config = AgentConfig.model_validate(merged)
    except ValidationError as error:
        first = error.errors()[0]
        location = tuple(str(part) for part in first["loc"])
        sources = [name for name, layer in reversed(layers) if _has_path(layer, location)]
        source = sources[0] if sources else "the configuration"
        raise UsageError(f"invalid configuration in {source}: {'.'.join(location) or '(root)'}: "
                         f"{first['msg']}") from None
    if config.notify.smtp.password is not None:
        register_secret(config.notify.smtp.password.get_secret_value())
    api_key = config.llm.get("api_key")
    if isinstance(api_key, str):
        register_secret(api_key)
    return config


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise UsageError(f"config file {path} does not exist") from None
    except OSError as error:
        raise UsageError(f"cannot read config file {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"config file {path} is not valid TOML: {error}") from None


def environment_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for name, path in ENVIRONMENT_VARIABLES.items():
        value = environ.get(name)
        if value is None or value == "":
            continue
        parsed: Any = _split_list(value) if path == ("notify", "channels") else value
        layer = merge(layer, nested(path, parsed))
    return layer


def choose_policy(config: AgentConfig, environ: Mapping[str, str] | None = None) -> PolicyName:
    """The policy to use: as configured; else scripted when a script is given; else llm when an
    API key is set; else the offline runbook."""
    environ = os.environ if environ is None else environ
    if config.policy is not None:
        return config.policy
    if config.script:
        return "scripted"
    return "llm" if any(environ.get(name) for name in LLM_KEY_VARIABLES) else "runbook"


def nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """``nested(("a", "b"), 1) == {"a": {"b": 1}}``."""
    result: Any = value
    for key in reversed(path):
        result = {key: result}
    return dict(result)


def _has_path(layer: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    current: Any = layer
    for key in path:
        if isinstance(current, list) and key.isdigit() and int(key) < len(current):
            current = current[int(key)]
        elif isinstance(current, Mapping) and key in current:
            current = current[key]
        else:
            return False
    return True


def _split_list(value: str) -> list[str]:
    """A JSON list, or items separated by newlines or commas (``command:`` specs may hold spaces)."""
    if value.lstrip().startswith("["):
        try:
            items = json.loads(value)
        except json.JSONDecodeError:
            raise UsageError("OPSLOOP_NOTIFY starts with '[' but is not a JSON list") from None
        return [str(item) for item in items]
    separator = "\n" if "\n" in value else ","
    return [item.strip() for item in value.split(separator) if item.strip()]
