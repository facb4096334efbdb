"""Which Python environment of the simulated host a program belongs to, and what is installed in it.

The host has two: the engine environment (the scenario's ``[packages]``) and, when the scenario has
``[training.environment]``, SpecForge's own virtual environment in the checkout (``<checkout>/.venv``). A
program under that environment's ``bin/`` (its ``python``, ``specforge``, ``torchrun``) is SpecForge's; any
other interpreter or bare command name is the engine environment's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from twin.layout import SimLayout
from twin.scenario import Scenario, normalise_package

# Exact pins in SpecForge's released metadata (``Requires-Dist``), per release.
SPECFORGE_PINS: dict[str, tuple[str, ...]] = {
    "0.2.0": ("torch==2.11.0", "transformers==5.8.1", "sglang==0.5.14"),
}
# Modules whose import fails in a broken environment (they load torch and its CUDA libraries).
TORCH_MODULES = ("torch", "sglang", "specforge", "sgl_kernel", "flashinfer", "transformers")


@dataclass(frozen=True)
class PythonEnvironment:
    name: str  # "engine" or "specforge"
    packages: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def version(self, distribution: str) -> str | None:
        return self.packages.get(normalise_package(distribution))

    def requirements(self, distribution: str) -> list[str]:
        """``Requires-Dist`` pins of an installed distribution (only SpecForge's are simulated)."""
        version = self.version(distribution)
        if normalise_package(distribution) != "specforge" or version is None:
            return []
        return list(SPECFORGE_PINS.get(version, ()))


def environment_of(program: str, scenario: Scenario, layout: SimLayout) -> PythonEnvironment:
    """The environment ``program`` (an interpreter or console script, by path or bare name) runs in."""
    own = scenario.training.environment
    if own is not None and os.sep in program:
        where = os.path.dirname(os.path.abspath(program))
        if where == os.path.abspath(layout.specforge_bin(scenario)):
            return PythonEnvironment("specforge", dict(own.packages), own.error)
    return PythonEnvironment("engine", dict(scenario.packages))
