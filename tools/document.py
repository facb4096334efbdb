"""The base of every record kept in the state document, and the timestamps it stores.

A leaf: the tools' records (:mod:`tools.records`, :mod:`tools.hosts.base`) and the agent's document
(:mod:`agent.state`) both build on it.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds precision, as stored throughout the document."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class Document(BaseModel):
    """Base for every part of the state: unknown keys are kept so newer writers do not lose data."""

    model_config = ConfigDict(extra="allow", validate_assignment=False)
