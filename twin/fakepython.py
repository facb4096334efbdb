"""The simulated host's Python interpreter for ``<python> -c SNIPPET``: the scenario decides the packages.

Usage (written by the command translation)::

    python -m twin.fakepython --scenario F --sim-root D [--interpreter PYTHON] -c SNIPPET ARGS

The interpreter decides the environment (:mod:`twin.environments`): SpecForge's own virtual environment or
the engine environment. For the engine-stack distributions in :data:`SIMULATED_DISTRIBUTIONS` that
environment is authoritative: a listed one is importable (a module with ``__version__``; ``torch`` also
answers ``torch.version.cuda`` and the ``torch.cuda`` device questions from the scenario's GPUs) and
``importlib.metadata`` reports its version (and SpecForge's pins as ``Requires-Dist``); an unlisted one is
absent even if installed here. In a broken environment importing torch and what loads it fails with the
environment's error. Every other module is the real one.

Host facts a script may read also come from the scenario: ``/proc/cpuinfo`` and ``/proc/meminfo``,
``os.cpu_count()``, ``os.sysconf("SC_PHYS_PAGES")``, ``shutil.disk_usage()`` and the host name. The
simulated host's environment names its model directories (``OPSLOOP_MODEL_DIRS``, ``os.pathsep``-separated)
and its SpecForge checkout (``SPECFORGE_DIR``), which a probe reads.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.metadata as metadata
import io
import os
import platform
import shutil
import socket
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twin.environments import TORCH_MODULES, PythonEnvironment, environment_of
from twin.layout import SimLayout
from twin.loader import ScenarioError, load_scenario
from twin.scenario import Scenario, normalise_package

SIMULATED_DISTRIBUTIONS = {
    "sglang": "sglang",
    "vllm": "vllm",
    "torch": "torch",
    "flashinfer-python": "flashinfer",
    "specforge": "specforge",
    "sgl-kernel": "sgl_kernel",
    "sglang-kernel": "sgl_kernel",
    "triton": "triton",
    "transformers": "transformers",
    "flash-attn": "flash_attn",
    "xgrammar": "xgrammar",
    "torchvision": "torchvision",
}


def _torch_module(scenario: Scenario, version: str) -> types.ModuleType:
    module = types.ModuleType("torch")
    module.__version__ = version  # type: ignore[attr-defined]
    gpus = [scenario.host.gpu_group(index) for index in range(scenario.host.gpu_count)]
    module.version = types.SimpleNamespace(cuda=scenario.host.cuda_version)  # type: ignore[attr-defined]

    def properties(index: int) -> types.SimpleNamespace:
        group = gpus[index]
        major, minor = (int(part) for part in group.compute_capability.split("."))
        return types.SimpleNamespace(name=group.name, total_memory=group.memory_mib * 2**20, major=major, minor=minor)

    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: bool(gpus),
        device_count=lambda: len(gpus),
        get_device_name=lambda index=0: gpus[index].name,
        get_device_capability=lambda index=0: (properties(index).major, properties(index).minor),
        get_device_properties=properties,
    )
    return module


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the scenario's engine-stack packages and hides the ones it does not list."""

    def __init__(self, scenario: Scenario, environment: PythonEnvironment) -> None:
        self.scenario, self.environment = scenario, environment
        self.present = {
            module: environment.version(name)
            for name, module in SIMULATED_DISTRIBUTIONS.items()
            if environment.version(name)
        }
        self.hidden = {module for module in SIMULATED_DISTRIBUTIONS.values()} - set(self.present)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if self.environment.error and top in TORCH_MODULES and top in self.present:
            raise ImportError(self.environment.error, name=fullname)
        if top in self.hidden:
            raise ModuleNotFoundError(f"No module named '{fullname}'", name=fullname)
        if fullname in self.present:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if top in self.present:
            raise ModuleNotFoundError(f"No module named '{fullname}' (simulated package {top})", name=fullname)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        version = self.present[spec.name] or "0"
        if spec.name == "torch":
            return _torch_module(self.scenario, version)
        module = types.ModuleType(spec.name)
        module.__version__ = version  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


class _Distribution(metadata.Distribution):
    def __init__(self, name: str, version: str, requirements: list[str]) -> None:
        self._name, self._version, self._requirements = name, version, requirements

    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            requires = "".join(f"Requires-Dist: {requirement}\n" for requirement in self._requirements)
            return f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {self._version}\n{requires}"
        return None

    def locate_file(self, path: Any) -> Any:
        return path


def install(scenario: Scenario, environment: PythonEnvironment) -> None:
    """Put the environment's packages in place for the rest of this interpreter's life."""
    sys.meta_path.insert(0, _Finder(scenario, environment))
    real_distribution = metadata.distribution

    def distribution(name: str) -> metadata.Distribution:
        key = normalise_package(name)
        if key in SIMULATED_DISTRIBUTIONS:
            version = environment.version(key)
            if version is None:
                raise metadata.PackageNotFoundError(name)
            return _Distribution(name, version, environment.requirements(key))
        return real_distribution(name)

    metadata.distribution = distribution  # type: ignore[assignment]
    metadata.version = lambda name: distribution(name).version  # type: ignore[assignment]
    metadata.requires = lambda name: distribution(name).requires  # type: ignore[assignment]


def _simulate_host(scenario: Scenario, sim_root: Path) -> None:
    host = scenario.host
    files = {
        "/proc/cpuinfo": "".join(
            f"processor\t: {core}\nmodel name\t: {host.cpu_model}\n\n" for core in range(host.cpu_cores)
        ),
        "/proc/meminfo": f"MemTotal:       {int(host.ram_gib * 2**20)} kB\n",
    }
    real_open, real_sysconf = builtins.open, os.sysconf

    def simulated_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str) and file in files:
            return io.StringIO(files[file])
        return real_open(file, *args, **kwargs)

    def sysconf(name: str | int) -> int:
        if name == "SC_PHYS_PAGES":
            return int(host.ram_gib * 2**30) // real_sysconf("SC_PAGE_SIZE")
        return real_sysconf(name)

    total = int(host.disk_free_gib * 2**30 * 1.25)
    free = int(host.disk_free_gib * 2**30)
    builtins.open = simulated_open
    os.sysconf = sysconf
    os.cpu_count = lambda: host.cpu_cores
    shutil.disk_usage = lambda path: shutil._ntuple_diskusage(total, total - free, free)
    socket.gethostname = lambda: host.hostname
    platform.node = lambda: host.hostname
    os.environ.update(SimLayout(sim_root).host_environment(scenario))


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        snippet_at = arguments.index("-c") + 1
        own = arguments[: snippet_at - 1]
        scenario_path = own[own.index("--scenario") + 1]
        sim_root = Path(own[own.index("--sim-root") + 1])
        interpreter = own[own.index("--interpreter") + 1] if "--interpreter" in own else "python"
        snippet, rest = arguments[snippet_at], arguments[snippet_at + 1 :]
    except (ValueError, IndexError):
        print(
            "usage: python -m twin.fakepython --scenario F --sim-root D [--interpreter PYTHON] -c SNIPPET [ARGS]",
            file=sys.stderr,
        )
        return 2
    try:
        scenario, _ = load_scenario(scenario_path)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    install(scenario, environment_of(interpreter, scenario, SimLayout(sim_root)))
    _simulate_host(scenario, sim_root)
    sys.argv = ["-c", *rest]
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(snippet, "<string>", "exec"), namespace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
