"""Tool-call ids every API accepts: ``[A-Za-z0-9_-]``, at most 64 characters, unique within the run.

Anthropic refuses ``tool_use`` ids with other characters, and some OpenAI-compatible servers send ids
such as ``functions.tail_log:0`` (Kimi's format), empty ids, or the same id every turn. Every result,
journal record and transcript entry is matched by id, and a run may move to another provider (the
model-unavailable question offers that), so ids are made valid once, when the reply arrives, and that id
is used everywhere afterwards: the same original id always maps to the same valid id, and a collision
with an earlier call gets a fresh one.
"""

from __future__ import annotations

import hashlib
import re
import uuid

from agent.policies.llm.turns import ToolCallRecord

VALID_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def valid_id(original: str) -> str:
    """``original`` when it is valid; else its valid characters with a short digest of the original (so
    two ids that differ only in invalid characters stay distinct); empty stays empty."""
    if not original or VALID_ID.match(original):
        return original
    digest = hashlib.sha256(original.encode()).hexdigest()[:8]
    return f"{_INVALID.sub('_', original)[:54]}_{digest}"


def unique_ids(calls: list[ToolCallRecord], known: set[str]) -> list[ToolCallRecord]:
    """The calls with valid ids that are unique among ``known`` and each other."""
    seen = set(known)
    unique: list[ToolCallRecord] = []
    for call in calls:
        call_id = valid_id(call.id)
        if not call_id or call_id in seen:
            call_id = f"call_{uuid.uuid4().hex[:20]}"
        seen.add(call_id)
        unique.append(call.model_copy(update={"id": call_id}))
    return unique
