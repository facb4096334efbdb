"""Parse an engine command line the way the real engine's argparse does (aliases, prefixes, errors)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from twin.engine.flag_tables import SGLANG_FLAGS, VLLM_FLAGS, FlagSpec, flag_table

PROGRAMS = {"sglang": "sglang serve", "vllm": "vllm serve"}


@dataclass
class ParsedFlags:
    values: dict[str, Any]  # canonical flag -> value (defaults filled in)
    explicit: set[str]  # canonical flags written on the command line


def known_flags(engine: str) -> set[str]:
    """Canonical flag names of every release the stand-in knows (for validating scenario rules)."""
    table = SGLANG_FLAGS if engine == "sglang" else VLLM_FLAGS
    return {spec.canonical for spec in table}


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


def build_parser(engine: str, version: str | None) -> tuple[argparse.ArgumentParser, list[FlagSpec]]:
    table = flag_table(engine, version)
    parser = argparse.ArgumentParser(prog=PROGRAMS[engine], allow_abbrev=True)
    if engine == "vllm":
        parser.add_argument("model_tag", nargs="?", default=argparse.SUPPRESS)
    for spec in table:
        _add(parser, spec)
    return parser, table


def parse_flags(engine: str, argv: list[str], version: str | None) -> ParsedFlags:
    """Parse like the real CLI; a bad command line exits with status 2 and argparse's message."""
    parser, table = build_parser(engine, version)
    namespace = vars(parser.parse_args(argv))
    values: dict[str, Any] = {}
    explicit: set[str] = set()
    for spec in table:
        dest = _dest(spec)
        if dest in namespace:
            values[spec.canonical] = namespace[dest]
            explicit.add(spec.canonical)
        else:
            values[spec.canonical] = False if spec.kind == "bool" else spec.default
    if engine == "vllm" and "model_tag" in namespace:
        values["--model"] = namespace["model_tag"]
        explicit.add("--model")
    model_flag = "--model-path" if engine == "sglang" else "--model"
    if not values.get(model_flag):
        parser.error(
            f"the following arguments are required: {model_flag}"
            if engine == "sglang"
            else "the model must be given as 'vllm serve <model>' or with --model"
        )
    return ParsedFlags(values=values, explicit=explicit)
