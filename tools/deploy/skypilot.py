"""A SkyPilot task for a configuration the agent found working: ``num_nodes`` and the accelerators per node,
the engine's installation as ``setup``, and a ``run`` section that maps SkyPilot's ``SKYPILOT_NODE_RANK`` and
``SKYPILOT_NODE_IPS`` onto the engine's multi-node flags (node 0's address is the first line of the IP list), the
environment fixes that were needed as ``envs``, and the readiness probe SkyPilot's serving layer uses."""

from __future__ import annotations

from typing import Any

from tools.deploy.commands import RankCommands


def task(
    name: str,
    commands: RankCommands,
    *,
    nodes: int,
    accelerators: str,
    port: int,
    setup: str,
    env: dict[str, str],
    initial_delay_seconds: int,
) -> dict[str, Any]:
    run = "set -e\n"
    if nodes > 1:
        run += 'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)\n'
        run += f'if [ "$SKYPILOT_NODE_RANK" = "0" ]; then\n  {commands.head}\nelse\n  {commands.worker}\nfi\n'
    else:
        run += commands.head + "\n"
    document: dict[str, Any] = {
        "name": name,
        "num_nodes": nodes,
        "resources": {"accelerators": accelerators, "ports": port},
    }
    if env:
        document["envs"] = dict(sorted(env.items()))
    document["setup"] = setup
    document["run"] = run
    document["service"] = {
        "readiness_probe": {"path": "/health", "initial_delay_seconds": initial_delay_seconds},
        "replicas": 1,
    }
    return document
