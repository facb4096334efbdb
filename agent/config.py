"""Loading the agent's configuration: layers merged into one typed document (:mod:`agent.settings`).

Layers, later ones win: built-in defaults < the config file (``--config FILE``, else ``agent.toml``
in the state directory, if present) < environment variables (``OPSLOOP_*``, listed in
:data:`agent.settings.ENVIRONMENT_VARIABLES`) < command-line flags. The whole document is validated
here, the policies' sections included; a bad value is reported in one line naming the field and the
layer it came from. Secrets (SMTP password, API keys) are registered with the redactor as soon as
they are read, so they are masked wherever they might appear. :func:`describe_sources` says which
layer each effective value came from (``agent config show``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agent.events import UsageError
from agent.policies.llm.settings import API_KEY_VARIABLES
from agent.settings import ENVIRONMENT_VARIABLES, AgentConfig, PolicyName
from tools.mappings import merge
from tools.redact import register_secret

CONFIG_FILE_NAME = "agent.toml"
SourceKind = Literal["default", "file", "environment", "flag"]


@dataclass(frozen=True)
class Layer:
    kind: SourceKind
    name: str  # as errors name it: "config file PATH", "environment", "command line"
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Source:
    """Where one effective setting came from: its layer and, for the environment, the variable."""

    key: str
    value: Any
    kind: SourceKind
    detail: str = ""


def read_layers(
    state_dir: Path,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[Layer]:
    """The non-default layers, lowest first."""
    layers: list[Layer] = []
    path = config_file if config_file is not None else state_dir / CONFIG_FILE_NAME
    if config_file is not None or path.exists():
        layers.append(Layer("file", f"config file {path}", read_config_file(path)))
    layers.append(Layer("environment", "environment", environment_layer(os.environ if environ is None else environ)))
    layers.append(Layer("flag", "command line", overrides or {}))
    return layers


def load_config(
    state_dir: Path,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> AgentConfig:
    """Merge the layers and validate. Raises :class:`UsageError` with a one-line message."""
    return validate(read_layers(state_dir, config_file, environ, overrides))


def _described_hosts(layers: list[Layer], merged: dict[str, Any]) -> list[Any]:
    """``--host NAME`` (a later layer's plain string) takes the settings of a ``[[hosts]]`` entry with that target
    or name from an earlier layer, so a host can be described once in agent.toml and chosen on the command line."""
    described: dict[str, Any] = {}
    for layer in layers:
        for entry in layer.values.get("hosts") or []:
            if isinstance(entry, dict):
                for key in ("target", "name"):
                    if isinstance(entry.get(key), str):
                        described.setdefault(entry[key], entry)
    return [described.get(entry, entry) if isinstance(entry, str) else entry for entry in merged.get("hosts") or []]


def validate(layers: list[Layer]) -> AgentConfig:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = merge(merged, layer.values)
    if merged.get("hosts"):
        merged["hosts"] = _described_hosts(layers, merged)
    try:
        config = AgentConfig.model_validate(merged)
    except ValidationError as error:
        first = error.errors()[0]
        location = tuple(str(part) for part in first["loc"])
        sources = [layer.name for layer in reversed(layers) if _has_path(layer.values, location)]
        source = sources[0] if sources else "the configuration"
        raise UsageError(
            f"invalid configuration in {source}: {'.'.join(location) or '(root)'}: {first['msg']}"
        ) from None
    for secret in (config.notify.smtp.password, config.llm.api_key):
        if secret is not None:
            register_secret(secret.get_secret_value())
    return config


def describe_sources(config: AgentConfig, layers: list[Layer]) -> list[Source]:
    """Every effective setting (dotted key, JSON value) with the layer that set it last."""
    variables = {path: name for name, path in ENVIRONMENT_VARIABLES.items()}
    described = []
    for key, value in _leaves(config.model_dump(mode="json")):
        path = tuple(key.split("."))
        setters = [layer for layer in layers if any(_overlaps(path, given) for given, _ in _leaves(layer.values))]
        if not setters:
            described.append(Source(key, value, "default"))
            continue
        layer = setters[-1]
        detail = variables.get(path, "") if layer.kind == "environment" else layer.name.removeprefix("config file ")
        described.append(Source(key, value, layer.kind, detail))
    return described


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
        parsed: Any = _split_list(value) if path in (("notify", "channels"), ("hosts",)) else value
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
    return "llm" if any(environ.get(name) for name in API_KEY_VARIABLES.values()) else "runbook"


def nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """``nested(("a", "b"), 1) == {"a": {"b": 1}}``."""
    result: Any = value
    for key in reversed(path):
        result = {key: result}
    return dict(result)


def _leaves(value: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every leaf; lists and empty tables are leaves."""
    leaves: list[tuple[str, Any]] = []
    for key, item in value.items():
        dotted = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            leaves += _leaves(item, f"{dotted}.")
        else:
            leaves.append((dotted, item))
    return leaves


def _overlaps(path: tuple[str, ...], given: str) -> bool:
    other = tuple(given.split("."))
    shorter = min(len(path), len(other))
    return path[:shorter] == other[:shorter]


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
