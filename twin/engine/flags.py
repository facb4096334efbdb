"""Parse an engine command line the way the real release's argparse does.

Two steps. First the command line is checked against the flags the pretended release accepts, built
from the release data (:mod:`engine_facts.accepted_flags`): unknown flags, bad choices and ambiguous
prefixes fail with argparse's own message and exit status 2, exactly where the real release fails.
Then the accepted options, under their canonical names, are read with the typed table of
:mod:`twin.engine.flag_tables`, which gives the values and defaults the stand-in simulates.
A version that is not among the releases read (a development build, a newer release) behaves like the
closest older release read, or the newest one for a development build.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from engine_facts.accepted_flags import FlagSet, from_release_data
from engine_facts.release_facts import known_releases
from engine_facts.versions import parse_release
from twin.engine.flag_tables import SGLANG_FLAGS, VLLM_FLAGS, FlagSpec, flag_table

PROGRAMS = {"sglang": "sglang serve", "vllm": "vllm serve"}
HELP = {"-h", "--help", "--help=all"}


@dataclass
class ParsedFlags:
    values: dict[str, Any]  # canonical flag -> value (defaults filled in)
    explicit: set[str]  # canonical flags written on the command line


def known_flags(engine: str) -> set[str]:
    """Canonical flag names of every release the stand-in knows (for validating scenario rules)."""
    table = SGLANG_FLAGS if engine == "sglang" else VLLM_FLAGS
    return {spec.canonical for spec in table}


def pretended_flags(engine: str, version: str | None) -> FlagSet:
    """The release data's flags for the release the stand-in pretends to be."""
    releases = known_releases(engine)
    release = parse_release(version)
    older = [known for known in releases if release is not None and known <= release]
    chosen = older[-1] if older else releases[-1]
    flags = from_release_data(engine, chosen)
    assert flags is not None  # chosen comes from the data
    return flags


def help_text(engine: str, version: str | None) -> str:
    parser = pretended_flags(engine, version).parser(PROGRAMS[engine])
    parser.add_argument("-h", "--help", action="help", help="show this help message and exit")
    return parser.format_help()


def _dest(spec: FlagSpec) -> str:
    return spec.canonical.lstrip("-").replace("-", "_")


def _add(parser: argparse.ArgumentParser, spec: FlagSpec) -> None:
    common: dict[str, Any] = {"dest": _dest(spec), "default": argparse.SUPPRESS}
    if spec.kind == "bool":
        parser.add_argument(*spec.names, action="store_true", **common)
    elif spec.kind == "optbool":
        parser.add_argument(*spec.names, action=argparse.BooleanOptionalAction, **common)
    elif spec.kind == "ints":
        parser.add_argument(*spec.names, type=int, nargs="+", **common)
    elif spec.kind == "strs":
        parser.add_argument(*spec.names, nargs="+", **common)
    else:
        converter = {"str": str, "int": int, "float": float}[spec.kind]
        parser.add_argument(*spec.names, type=converter, **common)


def _canonical_argv(engine: str, accepted: FlagSet, namespace: dict[str, Any]) -> list[str]:
    """The accepted options again, spelled with the typed table's names (values as written)."""
    table = {name: spec for spec in flag_table(engine) for name in spec.names}
    argv: list[str] = [namespace["model_tag"]] if "model_tag" in namespace else []
    for flag in accepted.flags:
        if flag.dest not in namespace:
            continue
        spec = next((table[name] for name in flag.names if name in table), None)
        value = namespace[flag.dest]
        if spec is None or value is None:
            continue
        if value is True or value is False:
            if spec.kind == "optbool":
                argv.append(spec.canonical if value else "--no-" + spec.canonical[2:])
            elif value:
                argv.append(spec.canonical)
            continue
        argv += [spec.canonical, *(value if isinstance(value, list) else [value])]
    return argv


def parse_flags(engine: str, argv: list[str], version: str | None) -> ParsedFlags:
    """Parse like the real CLI; a bad command line exits with status 2 and argparse's message."""
    accepted = pretended_flags(engine, version)
    checker = accepted.parser(PROGRAMS[engine])
    namespace = vars(checker.parse_args(argv))
    typed = argparse.ArgumentParser(prog=PROGRAMS[engine], allow_abbrev=False)
    if engine == "vllm":
        typed.add_argument("model_tag", nargs="?", default=argparse.SUPPRESS)
    table = flag_table(engine)
    for spec in table:
        _add(typed, spec)
    typed_namespace = vars(typed.parse_known_args(_canonical_argv(engine, accepted, namespace))[0])
    values: dict[str, Any] = {}
    explicit: set[str] = set()
    for spec in table:
        dest = _dest(spec)
        if dest in typed_namespace:
            values[spec.canonical] = typed_namespace[dest]
            explicit.add(spec.canonical)
        else:
            values[spec.canonical] = False if spec.kind == "bool" else spec.default
    if engine == "vllm" and "model_tag" in typed_namespace:
        values["--model"] = typed_namespace["model_tag"]
        explicit.add("--model")
    model_flag = "--model-path" if engine == "sglang" else "--model"
    if not values.get(model_flag):
        checker.error(
            f"the following arguments are required: {model_flag}"
            if engine == "sglang"
            else "the model must be given as 'vllm serve <model>' or with --model"
        )
    return ParsedFlags(values=values, explicit=explicit)
