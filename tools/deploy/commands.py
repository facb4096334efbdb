"""The engine's command line for each rank of a deployment, built by the same release-aware flag builders as a
launch here, with the node rank and node 0's address left to the cluster manager (shell variables it sets)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from tools.engines.build import build_command
from tools.engines.command import EngineCommand
from tools.engines.config import EngineLaunchConfig

INIT_PORT = 5000  # node 0's rendezvous port inside the deployment
_HEAD = "opsloop-node-zero.invalid"  # stands for node 0's address until it is replaced by the manager's variable
# Cluster-manager names for the GPUs the probe reports; unknown names need the accelerators argument.
_ACCELERATORS = [
    (re.compile(r"H200"), "H200"),
    (re.compile(r"H100"), "H100"),
    (re.compile(r"A100.*80"), "A100-80GB"),
    (re.compile(r"A100"), "A100"),
    (re.compile(r"L40S"), "L40S"),
    (re.compile(r"L4\b"), "L4"),
    (re.compile(r"B200"), "B200"),
    (re.compile(r"RTX PRO 6000"), "RTXPRO6000"),
]


def accelerator_name(gpu_name: str) -> str | None:
    """SkyPilot's name for a GPU as nvidia-smi names it, e.g. "NVIDIA H100 80GB HBM3" -> "H100"."""
    return next((name for pattern, name in _ACCELERATORS if pattern.search(gpu_name)), None)


@dataclass
class RankCommands:
    head: str  # node 0
    worker: str  # every other node; the rank comes from ``rank_variable``
    env: dict[str, str]  # what the builders and the configuration set
    command: EngineCommand


def rank_commands(
    config: EngineLaunchConfig,
    version: str | None,
    nodes: int,
    *,
    rank_variable: str,
    head_variable: str,
    python: str = "python3",
) -> RankCommands:
    """Shell command lines for node 0 and for the other nodes (``rank_variable`` and ``head_variable`` are shell
    expansions such as ``$SKYPILOT_NODE_RANK`` / ``$(LWS_WORKER_INDEX)``)."""
    served = config.model_copy(update={"host": "0.0.0.0", "nnodes": nodes, "node_rank": 0})
    if nodes > 1:
        served = served.model_copy(update={"dist_init_addr": f"{_HEAD}:{INIT_PORT}"})
    head = build_command(served, python, version)
    lines = [_shell(head.argv, head_variable, rank_variable)]
    if nodes > 1:
        worker = build_command(served.model_copy(update={"node_rank": 1}), python, version)
        argv = list(worker.argv)
        argv[argv.index("--node-rank") + 1] = rank_variable
        lines.append(_shell(argv, head_variable, rank_variable))
    else:
        lines.append(lines[0])
    return RankCommands(head=lines[0], worker=lines[1], env=dict(head.env), command=head)


def _shell(argv: list[str], head_variable: str, rank_variable: str) -> str:
    """The argv as one shell line; the placeholders become the manager's variables (left unquoted to expand)."""
    words = []
    for word in argv:
        if word == rank_variable:
            words.append(word)
        elif _HEAD in word:  # node 0's address (and port): plain characters around the variable
            words.append(word.replace(_HEAD, head_variable))
        else:
            words.append(shlex.quote(word))
    return " ".join(words)
