"""Confining a command: bubblewrap namespaces (bwrap.py), a process cap (cgroup.py), loopback relays to the
engines (relay.py), all described by one :class:`Confinement` (confinement.py) and applied by :func:`confined`."""

from tools.hosts.sandbox.confinement import Confinement, SandboxUnavailable
from tools.hosts.sandbox.run import confined, sandbox_problem

__all__ = ["Confinement", "SandboxUnavailable", "confined", "sandbox_problem"]
