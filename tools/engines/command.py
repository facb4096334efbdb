"""The command that launches an engine: argv, extra environment, and notes about version rules applied."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tools.engines.config import EngineLaunchConfig
from tools.engines.versions import parse_release


class EngineCommand(BaseModel):
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # version rules applied, settings the engine will change
    engine_version: str | None = None


class FlagError(ValueError):
    """The config asks for something the installed engine release cannot do."""


def build_command(config: EngineLaunchConfig, engine_python: str,
                  engine_version: str | None) -> EngineCommand:
    """Flags for the installed release of the configured engine (see the per-engine modules)."""
    from tools.engines import sglang_flags, vllm_flags

    release = parse_release(engine_version)
    builder = sglang_flags.build if config.engine == "sglang" else vllm_flags.build
    command = builder(config, engine_python, release)
    if release is None:
        command.notes.insert(0, f"{config.engine} version {engine_version or 'unknown'}: using the flags "
                                "of the newest release known to this tool")
    command.argv += config.extra_flags
    command.env.update(config.env)  # explicit environment wins over what the builder chose
    command.engine_version = engine_version
    return command
