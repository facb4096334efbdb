"""The engine facts read from published releases (``release_facts.json``), as typed records.

The file is written by ``scripts/engine-facts``; see ``engine_facts/extract/build.py`` for its layout.
:func:`release_view` gives one release's view (flags, environment variables, log lines, backends);
it answers only for releases that were read: a release between two read ones, a development build or
a newer release is not guessed at (see :mod:`engine_facts.accepted_flags` for what happens then).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from engine_facts.versions import Release, parse_release

Takes = Literal["none", "optbool", "one", "optional", "many"]


class _Fact(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    runs: list[tuple[str, str]] = Field(alias="in")

    def covers(self, release: Release) -> bool:
        return any(
            (parse_release(first) or (0, 0, 0)) <= release <= (parse_release(last) or (0, 0, 0))
            for first, last in self.runs
        )


class FlagFact(_Fact):
    names: list[str]
    takes: Takes
    choices: list[str] | None = None
    deprecated: bool = False
    source: str


class EnvFact(_Fact):
    default: str | None = None
    source: str


class LogFact(_Fact):
    text: str
    level: str
    source: str


class BackendFact(_Fact):
    mla: bool
    capability_majors: list[int] | None = None
    source: str


class ScriptFact(_Fact):
    target: str


class PresenceFact(_Fact):
    pass


FactT = TypeVar("FactT", bound=_Fact)


class ReleaseEntry(BaseModel):
    version: str
    distribution: str
    file: str
    sha256: str


class EngineFacts(BaseModel):
    releases: list[ReleaseEntry]
    flags: dict[str, list[FlagFact]]
    env: dict[str, list[EnvFact]]
    logs: dict[str, list[LogFact]]
    console_scripts: dict[str, list[ScriptFact]]
    modules: dict[str, list[PresenceFact]]
    attention_backends: dict[str, list[BackendFact]] = Field(default_factory=dict)
    speculative_methods: dict[str, list[PresenceFact]] = Field(default_factory=dict)


class ReleaseFactsFile(BaseModel):
    format_version: int
    generated: str
    command: str
    engines: dict[str, EngineFacts]


class ReleaseView(BaseModel):
    """Everything known about one read release of one engine."""

    engine: str
    version: str
    flags: list[FlagFact]
    env: dict[str, EnvFact]
    logs: dict[str, list[LogFact]]
    console_scripts: dict[str, str]
    modules: list[str]
    attention_backends: dict[str, BackendFact]
    speculative_methods: list[str]


@functools.cache
def load_facts() -> ReleaseFactsFile:
    text = resources.files("engine_facts").joinpath("release_facts.json").read_text(encoding="utf-8")
    return ReleaseFactsFile.model_validate(json.loads(text))


def known_releases(engine: str) -> list[Release]:
    facts = load_facts().engines.get(engine)
    releases = [parse_release(entry.version) for entry in facts.releases] if facts else []
    return sorted(release for release in releases if release is not None)


def _pick(table: dict[str, list[FactT]], release: Release) -> dict[str, FactT]:
    return {name: fact for name, facts in table.items() for fact in facts if fact.covers(release)}


@functools.cache
def release_view(engine: str, release: Release) -> ReleaseView | None:
    """The facts of exactly this release, or None when it was not read."""
    facts = load_facts().engines.get(engine)
    if facts is None or release not in known_releases(engine):
        return None
    version = next(entry.version for entry in facts.releases if parse_release(entry.version) == release)
    logs: dict[str, list[LogFact]] = {}
    for milestone, entries in facts.logs.items():
        logs[milestone] = [entry for entry in entries if entry.covers(release)]
    return ReleaseView(
        engine=engine,
        version=version,
        flags=list(_pick(facts.flags, release).values()),
        env=_pick(facts.env, release),
        logs=logs,
        console_scripts={name: fact.target for name, fact in _pick(facts.console_scripts, release).items()},
        modules=sorted(_pick(facts.modules, release)),
        attention_backends=_pick(facts.attention_backends, release),
        speculative_methods=sorted(_pick(facts.speculative_methods, release)),
    )


def first_release_with(engine: str, kind: Literal["flags", "env"], name: str) -> str | None:
    """The oldest read release that has the flag or variable (for reasons shown to the user)."""
    facts = load_facts().engines.get(engine)
    table: dict[str, list[FlagFact]] | dict[str, list[EnvFact]] = {} if facts is None else getattr(facts, kind)
    candidates = [
        first
        for key, entries in table.items()
        for entry in entries
        for first, _ in entry.runs
        if key == name or (isinstance(entry, FlagFact) and name in entry.names)
    ]
    ordered = sorted(candidates, key=lambda version: parse_release(version) or (0, 0, 0))
    return ordered[0] if ordered else None
