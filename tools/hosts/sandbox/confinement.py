"""What a confined command may touch: a description, independent of how it is enforced.

The root file system is read-only; ``writable`` paths are bound read-write; ``hidden`` paths are
covered (an empty directory over a directory, ``/dev/null`` over a file); ``read_only`` paths are
bound read-only again inside a writable one (the agent's own code, ``.git`` directories);
``exposed`` paths are shown again inside a hidden one (read-only, or read-write when
``exposed_writable``). ``relay_ports`` are the loopback TCP ports the command may reach (the engines
the agent started); every other network address is unreachable. ``relay_targets`` names, for a relayed
port, the port of this machine that serves it when the two differ (a simulated host's own ports). The
limits bound what the command can consume: processes, file size, CPU seconds and open files.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class SandboxUnavailable(Exception):
    """No sandbox can be started on this host (no bubblewrap, or it fails to create its namespaces)."""


class Confinement(BaseModel):
    writable: list[Path] = Field(default_factory=list)
    hidden: list[Path] = Field(default_factory=list)
    read_only: list[Path] = Field(default_factory=list)
    exposed: list[Path] = Field(default_factory=list)
    exposed_writable: list[Path] = Field(default_factory=list)
    relay_ports: list[int] = Field(default_factory=list)
    relay_targets: dict[int, int] = Field(default_factory=dict)
    max_processes: int = Field(default=512, ge=8)
    max_file_bytes: int = Field(default=16 * 1024**3, ge=1024)
    max_cpu_seconds: int = Field(default=3600, ge=1)
    max_open_files: int = Field(default=4096, ge=64)

    def with_exposed_writable(self, path: Path) -> Confinement:
        """A copy that also shows ``path`` read-write (the simulated machine's files inside the state)."""
        return self.model_copy(update={"exposed_writable": [*self.exposed_writable, path]})
