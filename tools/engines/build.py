"""Choose the flag builder for the configured engine and finish its command (extra flags, explicit env)."""

from __future__ import annotations

from tools.engines import sglang_flags, vllm_flags
from tools.engines.command import EngineCommand
from tools.engines.config import EngineLaunchConfig
from tools.engines.versions import parse_release


def build_command(config: EngineLaunchConfig, engine_python: str, engine_version: str | None) -> EngineCommand:
    """Flags for the installed release of the configured engine (see the per-engine modules)."""
    release = parse_release(engine_version)
    builder = sglang_flags.build if config.engine == "sglang" else vllm_flags.build
    command = builder(config, engine_python, release)
    if release is None:
        command.notes.insert(
            0,
            f"{config.engine} version {engine_version or 'unknown'}: using the flags "
            "of the newest release known to this tool",
        )
    command.argv += config.extra_flags
    command.env.update(config.env)  # explicit environment wins over what the builder chose
    command.engine_version = engine_version
    return command
