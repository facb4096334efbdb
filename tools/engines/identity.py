"""Is the server answering on the engine's port the one this launch started? Asked by the model it serves.

A 200 from /health only says that something serves HTTP there. Another program may hold the port (a
server a colleague started, a previous engine of another run), and its /health would pass for ours. So a
health check that passes is followed by a question only our engine answers as expected: which model it serves.
vLLM and SGLang list the served model name in ``/v1/models`` (``data[].id``: ``--served-model-name``, by
default the model path as given); SGLang also tells its model path in ``/get_model_info``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tools.engines.config import EngineLaunchConfig

FOREIGN_SERVER = "foreign_server"


def expected_names(config: EngineLaunchConfig) -> set[str]:
    """The names the launched engine serves under: ``served_model_name`` (also as given in ``extra_flags``),
    else the model path."""
    names = {config.served_model_name} if config.served_model_name else set()
    flags = config.extra_flags
    for index, flag in enumerate(flags):
        if flag == "--served-model-name":
            names.update(value for value in flags[index + 1 :] if not value.startswith("-"))
        elif flag.startswith("--served-model-name="):
            names.add(flag.split("=", 1)[1])
    return {_normal(name) for name in names or {config.model_path}}


def _normal(name: str) -> str:
    return name.rstrip("/") or name


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (ValueError, json.JSONDecodeError):
        return None


def served_names(client: httpx.Client, root: str, engine: str) -> tuple[set[str] | None, str]:
    """(the model names the server at ``root`` says it serves, the route asked); None when it names none.

    Raises httpx.HTTPError when the server cannot be asked."""
    response = client.get(root + "/v1/models")
    listing = _json(response) if response.status_code == 200 else None
    if isinstance(listing, dict) and isinstance(listing.get("data"), list):
        ids = {item.get("id") for item in listing["data"] if isinstance(item, dict)}
        return {_normal(name) for name in ids if isinstance(name, str)}, "/v1/models"
    if engine != "sglang":
        return None, "/v1/models"
    response = client.get(root + "/get_model_info")
    info = _json(response) if response.status_code == 200 else None
    if isinstance(info, dict):
        names = {info.get("served_model_name"), info.get("model_path")}
        found = {_normal(name) for name in names if isinstance(name, str)}
        return (found or None), "/get_model_info"
    return None, "/get_model_info"


def foreign_server(client: httpx.Client, root: str, config: EngineLaunchConfig) -> str | None:
    """Why the server at ``root`` is not the engine launched with ``config`` (a ``foreign_server:`` line), or
    None when it serves the model the launch asked for.

    Raises httpx.HTTPError when the server cannot be asked."""
    wanted = expected_names(config)
    found, route = served_names(client, root, config.engine)
    if found is not None and found & wanted:
        return None
    serves = f"serves {', '.join(sorted(found))}" if found else f"names no model at {route}"
    return (
        f"{FOREIGN_SERVER}: the server answering on port {config.effective_port} {serves}, not "
        f"{' or '.join(sorted(wanted))} as launched: another process holds the port, and it is not our engine"
    )
