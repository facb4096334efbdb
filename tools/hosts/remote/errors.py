"""The helper's expected failures, each with a kind the agent maps back to its own exception."""

from __future__ import annotations


class OperationError(Exception):
    """``not_found`` (FileNotFoundError), ``write_refused`` (the write guard refused), ``failed`` (other)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
