"""SpecForge's environment: which interpreter runs SpecForge, and whether specforge's pins hold there.

SpecForge 0.2.0 pins ``torch==2.11.0``, ``transformers==5.8.1`` and ``sglang==0.5.14`` (its ``Requires-Dist``),
so it normally lives in an environment of its own. The interpreter is, in order: the tool's
``specforge_python`` argument, the ``tools.specforge_python`` setting, the one the probe found
(``$SPECFORGE_DIR/.venv/bin/python``), else the engine environment's. The check reads installed metadata
only (a stdlib snippet run with that interpreter), so it is quick and does not import torch.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from tools.base import ToolContext
from tools.hosts.base import Host

SNIPPET = r"""
import importlib.metadata as metadata, json, re
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
report = {"packages": {name: version(name) for name in ("specforge", "torch", "sglang", "transformers")},
          "unmet": []}
if report["packages"]["specforge"]:
    for requirement in metadata.requires("specforge") or []:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;]+)\s*", requirement)
        if match:
            found = version(match.group(1))
            if found is None or found.split("+")[0] != match.group(2):
                report["unmet"].append(f"{match.group(1)}=={match.group(2)} (installed: {found or 'none'})")
print(json.dumps(report))
"""


class SpecForgeEnvironmentReport(BaseModel):
    python: str
    source: str = Field(description="Where the interpreter came from: argument, setting, probe or engine")
    packages: dict[str, str | None] = Field(default_factory=dict)
    unmet: list[str] = Field(default_factory=list, description="specforge's exact pins that the environment misses")
    error: str | None = Field(default=None, description="Why the interpreter could not be asked")

    @property
    def version(self) -> str | None:
        return self.packages.get("specforge")


def specforge_python(requested: str | None, context: ToolContext) -> tuple[str, str]:
    """(interpreter, where it came from) for SpecForge's commands."""
    if requested:
        return requested, "argument"
    if context.settings.specforge_python:
        return context.settings.specforge_python, "setting"
    if context.state.environment.specforge_python:
        return context.state.environment.specforge_python, "probe"
    return context.settings.engine_python, "engine"


def inspect_environment(host: Host, python: str, source: str) -> SpecForgeEnvironmentReport:
    """The SpecForge-related packages of ``python``'s environment and specforge's unmet pins."""
    report = SpecForgeEnvironmentReport(python=python, source=source)
    result = host.run([python, "-c", SNIPPET], timeout=120)
    lines = (result.stdout or "").strip().splitlines()
    if result.exit_code != 0 or not lines:
        detail = (result.stderr or result.stdout).strip().splitlines()
        report.error = "timed out" if result.timed_out else detail[-1][:300] if detail else f"exit {result.exit_code}"
        return report
    try:
        document = json.loads(lines[-1])
        report.packages = {str(key): value for key, value in document["packages"].items()}
        report.unmet = [str(item) for item in document["unmet"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        report.error = f"unreadable answer: {lines[-1][:200]!r}"
    return report
