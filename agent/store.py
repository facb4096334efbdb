"""Where a run's state lives: ``latest.json``, ``previous.json`` and the journal, in one directory.

``save`` replaces ``latest.json`` atomically (temp file in the same directory, fsync, rename, fsync
the directory) after linking the old version to ``previous.json``, so at every instant one complete
``latest.json`` exists. A state file that cannot be read or validated is never overwritten: loading
it raises :class:`StateFileError`, which names the file and says whether ``previous.json`` is usable.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.events import UsageError
from agent.history import move_to_journal
from agent.journal import JOURNAL_FILE, Journal
from agent.journal import StateWriteError as StateWriteError  # re-exported: callers meet it via the store
from agent.migrations import migrate
from agent.redact_document import redact_json_document
from agent.secrets_file import SECRETS_FILE, RunSecrets, read_secrets, write_secrets
from agent.state import SCHEMA_VERSION, ProjectState
from tools.document import utc_now
from tools.private_files import private_directory

LATEST_FILE = "latest.json"
PREVIOUS_FILE = "previous.json"


class StateFileError(UsageError):
    """The state file is missing, unreadable or invalid. It is left exactly as it is."""


class StateStore:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.latest_path = state_dir / LATEST_FILE
        self.previous_path = state_dir / PREVIOUS_FILE
        self._journal: Journal | None = None
        self._secrets: RunSecrets | None = None
        self._save_lock = threading.Lock()
        self._last_saved: tuple[str, str] | None = None  # (updated_at, serialized document) last written

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            self._journal = Journal(self.state_dir / JOURNAL_FILE, self.secrets().key)
        return self._journal

    def secrets(self) -> RunSecrets:
        """The run's secrets file, created (with a new journal key) when there is none."""
        if self._secrets is None:
            self._secrets = read_secrets(self.state_dir)
            if self._secrets is None:
                self._secrets = RunSecrets()
                write_secrets(self.state_dir, self._secrets)
        return self._secrets

    def keep_secrets(self, notify: list[str], config_overrides: dict[str, Any]) -> None:
        """Keep the command-line targets and settings as given (the state holds them masked)."""
        self._secrets = self.secrets().model_copy(update={"notify": notify, "config_overrides": config_overrides})
        write_secrets(self.state_dir, self._secrets)

    def exists(self) -> bool:
        return self.latest_path.exists()

    def load(self, path: Path | None = None) -> ProjectState:
        """Read and validate the state (``latest.json`` unless another file of the directory is named)."""
        path = path or self.latest_path
        try:
            return read_state(path)
        except StateFileError as error:
            hint = ""
            if path == self.latest_path and self.previous_path.exists():
                try:
                    previous = read_state(self.previous_path)
                    hint = (
                        f"; {self.previous_path} is usable (step {previous.step}, saved "
                        f"{previous.updated_at}): copy it over {path.name} to go back to it"
                    )
                except StateFileError:
                    hint = f"; {self.previous_path} is not usable either"
            raise StateFileError(f"{error}{hint}") from None

    def save(self, state: ProjectState) -> None:
        """Write the state atomically and durably; the version it replaces becomes ``previous.json``."""
        with self._save_lock:
            move_to_journal(state, self.journal)  # the document stays a hand-over of fixed size
            state.history.journal_head = self.journal.head
            stamp, state.updated_at = state.updated_at, utc_now()
            serialized = state.model_dump_json(indent=1)
            if self._last_saved is not None and self.latest_path.exists():
                before, last = self._last_saved
                if serialized == last.replace(_stamp(before), _stamp(state.updated_at), 1):
                    state.updated_at = stamp  # nothing changed: previous.json stays one real change behind
                    return
            data = (redact_json_document(serialized, indent=1) + "\n").encode("utf-8")
            try:
                self._write(data)
            except OSError as error:
                raise StateWriteError(
                    f"cannot write the state in {self.state_dir}: {error.strerror or error}; "
                    f"the last complete {LATEST_FILE} is untouched"
                ) from error
            self._last_saved = (state.updated_at, serialized)

    def _write(self, data: bytes) -> None:
        if self._last_saved is None:  # first save by this process: a private directory, no temp files of dead writers
            private_directory(self.state_dir)
            for stale in self.state_dir.glob(".*.json.*.tmp"):
                stale.unlink(missing_ok=True)
        temporary = self.state_dir / f".{LATEST_FILE}.{os.getpid()}.tmp"
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with open(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if self.latest_path.exists():
                self._keep_previous()
            os.replace(temporary, self.latest_path)
        finally:
            temporary.unlink(missing_ok=True)  # only left over when writing failed (e.g. disk full)
        _fsync_directory(self.state_dir)

    def _keep_previous(self) -> None:
        # A hard link keeps the old file whole under the new name without copying it.
        link = self.state_dir / f".{PREVIOUS_FILE}.{os.getpid()}.tmp"
        link.unlink(missing_ok=True)
        try:
            os.link(self.latest_path, link)
        except OSError:
            link.write_bytes(self.latest_path.read_bytes())
        os.replace(link, self.previous_path)

    def has_run(self) -> bool:
        return any(path.exists() for path in (self.latest_path, self.previous_path, self.journal.path))

    def archive(self, label: str) -> Path:
        """Move the run's files (state, previous state, journal) into ``archive/<label>-<time>/``.
        Nothing is deleted; logs and outputs stay where the archived state points to them."""
        self.close()
        stamp = utc_now().replace(":", "").replace("+0000", "Z")
        target = self.state_dir / "archive" / f"{label}-{stamp}"
        target.mkdir(parents=True, exist_ok=False)
        for path in (self.latest_path, self.previous_path, self.journal.path, self.state_dir / SECRETS_FILE):
            if path.exists():
                os.replace(path, target / path.name)
        self._secrets = None
        _fsync_directory(self.state_dir)
        return target

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None


def read_state(path: Path) -> ProjectState:
    """Load one state file, or raise :class:`StateFileError` saying what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StateFileError(f"no state file at {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise StateFileError(f"cannot read state file {path}: {error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise StateFileError(f"state file {path} is not valid JSON ({error}); it was left untouched") from None
    if not isinstance(document, dict):
        raise StateFileError(f"state file {path} does not hold a JSON object; it was left untouched")
    version = document.get("schema_version", 1)
    if type(version) is not int or version < 1:
        raise StateFileError(
            f"state file {path} has schema version {version!r}, not a positive integer; it was left untouched"
        )
    if version > SCHEMA_VERSION:
        raise StateFileError(
            f"state file {path} has schema version {version}, newer than this agent's "
            f"{SCHEMA_VERSION}; upgrade opsloop to read it"
        )
    try:
        return ProjectState.model_validate(migrate(document, SCHEMA_VERSION))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise StateFileError(
            f"state file {path} is not a valid state document ({where}: {first['msg']}; "
            f"{error.error_count()} problem(s)); it was left untouched"
        ) from None


def _stamp(updated_at: str) -> str:
    return f'"updated_at": "{updated_at}"'


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
