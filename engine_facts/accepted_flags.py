"""The flags one installed engine accepts: from the release data, or read from its ``--help``.

A :class:`FlagSet` is what the flag builders consult (``accepts``, ``choices``) and what the twin's
argument parser is built from (:meth:`FlagSet.parser`), so both follow the same release. Matching
follows argparse: an exact name wins; otherwise a unique prefix of one flag's names, when the engine's
parser allows abbreviations (SGLang's and vLLM's both do).
"""

from __future__ import annotations

import argparse
import re
from typing import Literal

from pydantic import BaseModel, Field

from engine_facts.release_facts import Takes, release_view
from engine_facts.versions import Release

Origin = Literal["release_data", "help"]


class AcceptedFlag(BaseModel):
    names: list[str]
    takes: Takes = "one"
    choices: list[str] | None = None
    deprecated: bool = False
    source: str | None = None

    @property
    def dest(self) -> str:
        longest = sorted((name for name in self.names if name.startswith("--")), key=lambda name: (-len(name), name))
        return (longest or self.names)[0].lstrip("-").replace("-", "_").replace(".", "_")


class FlagSet(BaseModel):
    engine: str
    version: str
    origin: Origin
    flags: list[AcceptedFlag] = Field(default_factory=list)
    allow_abbrev: bool = True

    def _by_name(self) -> dict[str, AcceptedFlag]:
        table: dict[str, AcceptedFlag] = {}
        for flag in self.flags:
            for name in flag.names:
                table[name] = flag
            if flag.takes == "optbool":
                for name in flag.names:
                    if name.startswith("--"):
                        table["--no-" + name[2:]] = flag
        return table

    def lookup(self, name: str) -> AcceptedFlag | None:
        """The flag an option string selects (exact, else a unique prefix as argparse resolves it)."""
        table = self._by_name()
        if name in table:
            return table[name]
        if not self.allow_abbrev or not name.startswith("--"):
            return None
        matches = {id(flag): flag for option, flag in table.items() if option.startswith(name)}
        return next(iter(matches.values())) if len(matches) == 1 else None

    def accepts(self, name: str, exact: bool = True) -> bool:
        return name in self._by_name() if exact else self.lookup(name) is not None

    def flag(self, name: str) -> AcceptedFlag | None:
        return self._by_name().get(name)

    def parser(self, program: str) -> argparse.ArgumentParser:
        """An argparse parser accepting exactly these flags (values kept as strings, choices checked)."""
        parser = argparse.ArgumentParser(prog=program, allow_abbrev=self.allow_abbrev, add_help=False)
        if self.engine == "vllm":
            parser.add_argument("model_tag", nargs="?", default=argparse.SUPPRESS)
        seen: set[str] = set()
        for flag in sorted(self.flags, key=lambda item: item.names):
            names = [name for name in flag.names if name not in seen]
            if not names:
                continue
            seen.update(names)
            options: dict[str, object] = {"dest": flag.dest, "default": argparse.SUPPRESS}
            if flag.takes == "none":
                options["action"] = "store_true"
            elif flag.takes == "optbool":
                options["action"] = argparse.BooleanOptionalAction
            else:
                options["nargs"] = {"one": None, "optional": "?", "many": "+"}[flag.takes]
                if flag.choices:
                    options["choices"] = flag.choices
            parser.add_argument(*names, **options)  # type: ignore[arg-type]
        return parser


def from_release_data(engine: str, release: Release) -> FlagSet | None:
    view = release_view(engine, release)
    if view is None:
        return None
    flags = [
        AcceptedFlag(
            names=fact.names, takes=fact.takes, choices=fact.choices, deprecated=fact.deprecated, source=fact.source
        )
        for fact in view.flags
    ]
    return FlagSet(engine=engine, version=view.version, origin="release_data", flags=flags)


_OPTION = re.compile(r"^(-{1,2}[A-Za-z0-9][\w.-]*)(?:[ =](.+))?$")


def _takes(metavar: str | None) -> tuple[Takes, list[str] | None]:
    if not metavar:
        return "none", None
    choices = re.fullmatch(r"\{([^}]*)\}.*", metavar)
    listed = [item for item in choices.group(1).split(",") if item] if choices else None
    if "..." in metavar:
        return "many", listed
    if metavar.startswith("[") and metavar.endswith("]"):
        return "optional", listed
    return "one", listed


def from_help_text(engine: str, version: str, text: str) -> FlagSet:
    """Flags from argparse ``--help`` output: each option line's invocation (``-a, --bee B``) is read."""
    flags: list[AcceptedFlag] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("-") or len(line) - len(line.lstrip()) > 8:
            continue
        invocation = re.split(r"\s{2,}", stripped, maxsplit=1)[0]
        names: list[str] = []
        takes: Takes = "none"
        choices: list[str] | None = None
        for part in invocation.split(", "):
            match = _OPTION.match(part.strip())
            if match is None:
                break
            names.append(match.group(1))
            takes, choices = _takes(match.group(2))
        if not names:
            continue
        negated = [name for name in names if name.startswith("--no-")]
        if negated and takes == "none":
            names = [name for name in names if name not in negated]
            takes = "optbool"
        if names and not any(names == flag.names for flag in flags):
            flags.append(AcceptedFlag(names=names, takes=takes, choices=choices))
    return FlagSet(engine=engine, version=version, origin="help", flags=flags)
