"""The Python sources (and entry points) of one release archive, read in memory; nothing is installed."""

from __future__ import annotations

import re
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ReleaseSources:
    """``files`` maps a path starting at the package folder (``vllm/envs.py``) to its text."""

    package: str
    files: dict[str, str] = field(default_factory=dict)
    console_scripts: dict[str, str] = field(default_factory=dict)


def _package_path(member: str, package: str) -> str | None:
    parts = member.split("/")
    if package in parts:
        index = parts.index(package)
        if index <= 1:  # wheel: "vllm/..."; sdist: "vllm-0.8.0/vllm/..."
            return "/".join(parts[index:])
    return None


def _scripts_from_pyproject(text: str) -> dict[str, str]:
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return {}
    return {str(name): str(target) for name, target in project.get("scripts", {}).items()}


def _scripts_from_entry_points(text: str) -> dict[str, str]:
    section, scripts = "", {}
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[] ")
        elif section == "console_scripts" and "=" in line:
            name, _, target = line.partition("=")
            scripts[name.strip()] = target.strip()
    return scripts


def _scripts_from_setup(text: str) -> dict[str, str]:
    return dict(re.findall(r"[\"']([\w-]+)\s*=\s*([\w.]+:\w+)[\"']", text)) if "console_scripts" in text else {}


def read_sources(archive: Path, package: str) -> ReleaseSources:
    """Every ``.py`` file under the package folder of an sdist (``.tar.gz``) or wheel (``.whl``)."""
    sources = ReleaseSources(package)
    module = package.replace("-", "_")
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as wheel:
            for name in wheel.namelist():
                path = _package_path(name, module)
                if path and name.endswith(".py"):
                    sources.files[path] = wheel.read(name).decode("utf-8", errors="replace")
                elif name.endswith(".dist-info/entry_points.txt"):
                    sources.console_scripts.update(_scripts_from_entry_points(wheel.read(name).decode()))
        return sources
    with tarfile.open(archive, "r:gz") as sdist:
        for member in sdist.getmembers():
            if not member.isfile():
                continue
            depth = member.name.count("/")
            path = _package_path(member.name, module)
            handle = None
            if (
                (path and member.name.endswith(".py"))
                or (depth == 1 and member.name.endswith(("/pyproject.toml", "/setup.py")))
                or member.name.endswith(".egg-info/entry_points.txt")
            ):
                handle = sdist.extractfile(member)
            if handle is None:
                continue
            text = handle.read().decode("utf-8", errors="replace")
            if path and member.name.endswith(".py"):
                sources.files[path] = text
            elif member.name.endswith("pyproject.toml"):
                sources.console_scripts.update(_scripts_from_pyproject(text))
            elif member.name.endswith("setup.py"):
                sources.console_scripts.update(_scripts_from_setup(text))
            else:
                sources.console_scripts.update(_scripts_from_entry_points(text))
    return sources
