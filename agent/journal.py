"""The append-only journal: one JSON record per line in ``journal.jsonl``.

Every decision, every tool call *before* it runs (``intent``) and its ``result`` after, and every
exit event are recorded. Each record is redacted, written whole, flushed and fsynced before the
caller continues, so after a crash the journal says exactly which calls had started. A torn last
line (the process died mid-write) is skipped on reading and terminated before the next append.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from tools.document import utc_now
from tools.redact import redact_value

JOURNAL_FILE = "journal.jsonl"


class StateWriteError(Exception):
    """The state or the journal could not be written (disk full, read-only directory...). The last
    complete ``latest.json`` and every whole journal record are still in place."""


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one record (``at`` and ``kind`` first) and make it durable. Returns what was written."""
        entry: dict[str, Any] = redact_value({"at": utc_now(), "kind": kind, **fields})
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            try:
                self._append(line)
            except OSError as error:
                raise StateWriteError(f"cannot append to the journal {self.path}: {error.strerror or error}") from error
        return entry

    def _append(self, line: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Opened per record: nothing to close, and each record is durable before this returns.
        with open(self.path, "ab+") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    line = b"\n" + line  # end a torn line so this record starts on its own line
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def records(self) -> list[dict[str, Any]]:
        """All whole records, oldest first. Lines that do not parse (a torn tail) are skipped."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        entries: list[dict[str, Any]] = []
        for raw in data.splitlines():
            try:
                entry = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def unfinished_intents(self) -> list[dict[str, Any]]:
        """Intent records whose call has no result record: calls that were running when the agent died."""
        entries = self.records()
        finished = {entry.get("call_id") for entry in entries if entry.get("kind") == "result"}
        return [entry for entry in entries if entry.get("kind") == "intent" and entry.get("call_id") not in finished]

    def close(self) -> None:
        """Nothing stays open between records; kept so callers can release a journal explicitly."""
