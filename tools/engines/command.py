"""The command that launches an engine (argv, environment, entry point, the reason for each version-dependent
choice) and the errors a flag builder raises. The per-engine builders produce it from what the installed release
accepts; :mod:`tools.engines.build` chooses the builder. A wanted feature the release lacks raises
:class:`FeatureMissing` naming it, instead of producing a command the engine would reject."""

from __future__ import annotations

from pydantic import BaseModel, Field


class VersionChoice(BaseModel):
    feature: str
    decision: str
    reason: str


class EngineCommand(BaseModel):
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    entry_point: str = ""
    notes: list[str] = Field(default_factory=list)  # settings the engine will change, caveats
    choices: list[VersionChoice] = Field(default_factory=list)
    engine_version: str | None = None
    flags_from: str = ""  # "release data 0.5.20" or "--help of 0.0.0.dev0"


class FlagError(ValueError):
    """The config asks for something the installed engine release cannot do."""


class FeatureMissing(FlagError):
    """One or more wanted features have no flag in this release (each named with the reason)."""

    def __init__(self, engine: str, version: str, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(f"{engine} {version} cannot do what the config asks: " + "; ".join(missing))


class FlagsUnknown(FlagError):
    """Neither the release data nor the engine's --help tells which flags this version accepts."""
