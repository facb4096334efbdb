"""A Kubernetes LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``) for a configuration the agent found working: one
group of ``size`` pods, the leader running node 0 and serving (with a readiness probe on /health), the workers
joining it; LWS sets ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and ``LWS_WORKER_INDEX`` in every pod."""

from __future__ import annotations

from typing import Any

from tools.deploy.commands import RankCommands


def _container(name: str, image: str, command: str, gpus: int, env: dict[str, str]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "command": ["/bin/sh", "-c", command],
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if env:
        container["env"] = [{"name": key, "value": value} for key, value in sorted(env.items())]
    return container


def _pod(container: dict[str, Any]) -> dict[str, Any]:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    return {"spec": {"containers": [container], "volumes": [volume]}}


def manifest(
    name: str,
    commands: RankCommands,
    *,
    nodes: int,
    gpus_per_node: int,
    image: str,
    port: int,
    env: dict[str, str],
    initial_delay_seconds: int,
) -> dict[str, Any]:
    leader = _container("engine", image, commands.head, gpus_per_node, env)
    leader["ports"] = [{"containerPort": port, "name": "http"}]
    leader["readinessProbe"] = {
        "httpGet": {"path": "/health", "port": port},
        "initialDelaySeconds": initial_delay_seconds,
        "periodSeconds": 10,
    }
    group: dict[str, Any] = {"size": nodes, "leaderTemplate": _pod(leader)}
    group["workerTemplate"] = _pod(_container("engine", image, commands.worker, gpus_per_node, env))
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "leaderWorkerTemplate": group},
    }
