"""The append-only journal: one JSON record per line in ``journal.jsonl``.

Every decision, every tool call *before* it runs (``intent``) and its ``result`` after, and every
exit event are recorded. Each record is redacted, written whole, flushed and fsynced before the
caller continues, so after a crash the journal says exactly which calls had started. A torn last
line (the process died mid-write) is skipped on reading and terminated before the next append.

With a key (kept in the run's secrets file), every record ends with ``"chain"``: an HMAC-SHA256 of the
previous record's chain and this record's text. Editing, removing or inserting a record breaks the
chain at that line, and cutting records off the end leaves the state's ``history.journal_head``
pointing at a record that is gone; :func:`agent.tamper.journal_problems` finds both.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from tools.document import utc_now
from tools.redact import redact_value

JOURNAL_FILE = "journal.jsonl"
CHAIN_TAIL = re.compile(rb', "chain": "([0-9a-f]{64})"\}$')


class StateWriteError(Exception):
    """The state or the journal could not be written (disk full, read-only directory...). The last
    complete ``latest.json`` and every whole journal record are still in place."""


def chain_value(key: bytes, previous: str, body: bytes) -> str:
    """The chain of a record whose text without its chain is ``body``, after a record with ``previous``."""
    return hmac.new(key, previous.encode("ascii") + b"\n" + body, hashlib.sha256).hexdigest()


def split_chain(line: bytes) -> tuple[bytes, str] | None:
    """(the record's text without its chain, the chain) of a chained line, or None."""
    match = CHAIN_TAIL.search(line)
    if match is None:
        return None
    return line[: match.start()] + b"}", match.group(1).decode("ascii")


class Journal:
    def __init__(self, path: Path, key: bytes | None = None) -> None:
        self.path = path
        self._key = key
        self._head: str | None = None  # the chain of the last record, read from the file on first need
        self._lock = threading.Lock()

    @property
    def head(self) -> str | None:
        """The chain of the newest record (None: nothing chained yet)."""
        if self._head is None and self._key is not None:
            self._head = last_chain(self.path)
        return self._head

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one record (``at`` and ``kind`` first) and make it durable. Returns what was written."""
        entry: dict[str, Any] = redact_value({"at": utc_now(), "kind": kind, **fields})
        body = json.dumps(entry, ensure_ascii=False, default=str).encode("utf-8")
        with self._lock:
            chain = None
            if self._key is not None:
                chain = chain_value(self._key, self.head or "", body)
                body = body[:-1] + f', "chain": "{chain}"}}'.encode()
            try:
                self._append(body + b"\n")
                self._head = chain or self._head
            except OSError as error:
                self._head = None
                raise StateWriteError(f"cannot append to the journal {self.path}: {error.strerror or error}") from error
            except BaseException:
                # Ctrl-C or SIGTERM can land after the line was written and before the head moved: read the
                # chain's end from the file next time, or the next record would break the agent's own chain.
                self._head = None
                raise
        return entry

    def _append(self, line: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Opened per record: nothing to close, and each record is durable before this returns.
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        with open(descriptor, "ab+") as handle:
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


def last_chain(path: Path, block: int = 1 << 20) -> str | None:
    """The chain of the last chained record of the file (read from the end), or None."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(size - block, 0)
            while True:
                handle.seek(start)
                lines = handle.read(size - start).splitlines()[1 if start else 0 :]
                for line in reversed(lines):
                    if (parts := split_chain(line)) is not None:
                        return parts[1]
                if start == 0:
                    return None
                start = max(start - block, 0)
    except FileNotFoundError:
        return None
