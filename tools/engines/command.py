"""The command that launches an engine (argv, extra environment, notes about version rules applied), and the
error a flag builder raises. The per-engine builders produce it; :mod:`tools.engines.build` chooses the builder."""

from __future__ import annotations

from pydantic import BaseModel, Field


class EngineCommand(BaseModel):
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # version rules applied, settings the engine will change
    engine_version: str | None = None


class FlagError(ValueError):
    """The config asks for something the installed engine release cannot do."""
