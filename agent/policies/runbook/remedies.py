"""Applying one diagnosed remedy to an engine launch configuration, and taking it back.

Remedies come from diagnose_log as data (``tools/logs/signatures.toml``, and the engine's own advice):
set, adjust, scale or unset a launch-config field (dotted for nested ones), set or scale environment
variables, append engine flags as written (``add_flags``), or move to a free port. A field the launch left to
the engine starts from the value the engine reported (``known``), else from an assumed default.
On the CPU (:func:`for_device`) the memory fraction is not what sizes the KV cache: a remedy that lowers or
raises it changes ``VLLM_CPU_KVCACHE_SPACE`` instead (halved, or doubled up to what the NUMA nodes hold).
"""

from __future__ import annotations

import copy
import socket
from typing import Any

# Starting points for fields a remedy adjusts when the launch left them to the engine's default.
_IMPLICIT_DEFAULTS: dict[str, float] = {
    "mem_fraction": 0.85,
    "cuda_graph_max_bs": 128,
    "max_running_requests": 128,
    "context_length": 131072,
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _container(config: dict[str, Any], dotted: str) -> tuple[dict[str, Any], str] | None:
    *parents, leaf = dotted.split(".")
    node = config
    for parent in parents:
        child = node.get(parent)
        if not isinstance(child, dict):
            return None
        node = child
    return node, leaf


def applicable(action: dict[str, Any]) -> bool:
    """Whether the runbook can apply this action itself (not a job for a human, not advice only)."""
    if action.get("needs_human"):
        return False
    keys = (
        "set_flag",
        "adjust_flag",
        "scale_flag",
        "unset_flag",
        "set_env",
        "scale_env",
        "add_flags",
        "pick_free_port",
    )
    return any(action.get(key) for key in keys)


def touched(action: dict[str, Any]) -> list[str]:
    """The dotted config fields an action changes (``env.NAME`` for variables)."""
    fields = [*(action.get("set_flag") or {}), *(action.get("adjust_flag") or {}), *(action.get("scale_flag") or {})]
    fields += list(action.get("unset_flag") or [])
    fields += [f"env.{name}" for name in [*(action.get("set_env") or {}), *(action.get("scale_env") or {})]]
    fields += ["extra_flags"] if action.get("add_flags") else []
    fields += ["port"] if action.get("pick_free_port") else []
    return list(dict.fromkeys(fields))


def value_at(config: dict[str, Any], dotted: str) -> Any:
    place = _container(config, dotted)
    return copy.deepcopy(place[0].get(place[1])) if place is not None else None


def restore(config: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """A new config with each dotted field back at its value in ``before`` (None: removed)."""
    new = copy.deepcopy(config)
    for dotted, value in before.items():
        place = _container(new, dotted)
        if place is None:
            continue
        if value is None:
            place[0].pop(place[1], None)
        else:
            place[0][place[1]] = copy.deepcopy(value)
    return new


def _start(place: tuple[dict[str, Any], str], known: dict[str, Any]) -> tuple[Any, str]:
    """The value a change starts from, and how it is known (for the report)."""
    value = place[0].get(place[1])
    if value is not None:
        return value, ""
    if known.get(place[1]) is not None:
        return known[place[1]], " (from the engine's own default)"
    return _IMPLICIT_DEFAULTS.get(place[1], 0), " (from an assumed default)"


def apply_remedy(
    config: dict[str, Any], action: dict[str, Any], known: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """A new config with the action applied, and a description of each change. The input is untouched.
    ``known``: values the engine reported for fields the config leaves unset."""
    new = copy.deepcopy(config)
    known = known or {}
    changes: list[str] = []
    for dotted, value in (action.get("set_flag") or {}).items():
        place = _container(new, dotted)
        if place is not None and place[0].get(place[1]) != value:
            place[0][place[1]] = value
            changes.append(f"{dotted}={value}")
    for dotted, delta in (action.get("adjust_flag") or {}).items():
        place = _container(new, dotted)
        if place is not None:
            old, how = _start(place, known)
            place[0][place[1]] = round(float(old) + float(delta), 4)
            changes.append(f"{dotted}: {old} -> {place[0][place[1]]}{how}")
    for dotted, factor in (action.get("scale_flag") or {}).items():
        place = _container(new, dotted)
        if place is not None:
            old, how = _start(place, known)
            place[0][place[1]] = max(1, int(float(old) * float(factor)))
            changes.append(f"{dotted}: {old} -> {place[0][place[1]]}{how}")
    for dotted in action.get("unset_flag") or []:
        place = _container(new, dotted)
        if place is not None and place[0].get(place[1]) is not None:
            place[0][place[1]] = None
            changes.append(f"{dotted} removed")
    environment = dict(new.get("env") or {})
    for name, value in (action.get("set_env") or {}).items():
        if environment.get(name) != value:
            environment[name] = value
            changes.append(f"{name}={value}")
    for name, factor in (action.get("scale_env") or {}).items():
        if name in environment and environment[name].isdigit():
            scaled = str(max(1, int(int(environment[name]) * float(factor))))
            if scaled != environment[name]:
                changes.append(f"{name}: {environment[name]} -> {scaled}")
                environment[name] = scaled
    new["env"] = environment
    flags = [str(flag) for flag in action.get("add_flags") or []]
    present = list(new.get("extra_flags") or [])
    if flags and not _contains(present, flags):
        new["extra_flags"] = present + flags
        changes.append(f"engine flags {' '.join(flags)}")
    if action.get("pick_free_port"):
        new["port"] = free_port()
        changes.append(f"port={new['port']}")
    return new, changes


CPU_KV_SPACE = "VLLM_CPU_KVCACHE_SPACE"


def for_device(action: dict[str, Any], config: dict[str, Any], kv_space_max_gib: int | None) -> dict[str, Any]:
    """The action as it applies where the engine runs: on the CPU (the launch sets the KV space), a change of
    the memory fraction becomes a change of the KV space, an integer number of GiB at least 1 and at most
    ``kv_space_max_gib``."""
    current = str((config.get("env") or {}).get(CPU_KV_SPACE, ""))
    delta = (action.get("adjust_flag") or {}).get("mem_fraction")
    if not current.isdigit() or delta is None:
        return action
    adjusted = {key: value for key, value in action["adjust_flag"].items() if key != "mem_fraction"}
    wanted = int(current) * 2 if float(delta) > 0 else int(current) // 2
    space = max(1, min(wanted, kv_space_max_gib or wanted))
    return {**action, "adjust_flag": adjusted, "set_env": {**(action.get("set_env") or {}), CPU_KV_SPACE: str(space)}}


def _contains(flags: list[str], wanted: list[str]) -> bool:
    return any(flags[index : index + len(wanted)] == wanted for index in range(len(flags) - len(wanted) + 1))
