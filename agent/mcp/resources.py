"""The state document and the hand-over note as MCP resources.

Both are read from the saved ``latest.json`` (replaced atomically after every call, and masked for
secrets when written), so a read never sees a document half-way through a tool's change.
"""

from __future__ import annotations

import os
from pathlib import Path

import mcp.types as types
from mcp.shared.exceptions import MCPError

from agent.render import render_status
from agent.store import StateStore
from tools.redact import redact_text

STATE_URI = "opsloop://state/latest.json"
HANDOVER_URI = "opsloop://state/handover.md"

RESOURCES = [
    types.Resource(
        uri=STATE_URI,
        name="state",
        title="Project state document",
        description="Everything the run knows: environment, model, tasks, findings, processes, benchmarks, "
        "patches, questions (schema 2: pinned and recent entries; older ones are in journal.jsonl).",
        mime_type="application/json",
    ),
    types.Resource(
        uri=HANDOVER_URI,
        name="handover",
        title="Hand-over note",
        description="The state as an engineer's hand-over note (what `agent status` prints).",
        mime_type="text/markdown",
    ),
]


def read_resource(uri: str, state_dir: Path) -> types.ReadResourceResult:
    store = StateStore(state_dir)
    if uri == STATE_URI:
        text, mime_type = store.latest_path.read_text(encoding="utf-8"), "application/json"
    elif uri == HANDOVER_URI:
        text, mime_type = redact_text(render_status(store.load(), state_dir, os.getpid())), "text/markdown"
    else:
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; the resources are {STATE_URI}, {HANDOVER_URI}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime_type)])
