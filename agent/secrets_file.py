"""What a run must keep but never show: ``secrets.json`` beside the state, readable by its owner only.

It holds the key of the journal's chain (:mod:`agent.journal`), the notification targets and the
command-line settings exactly as given (a webhook URL with a token, an LLM base URL with a password), so
that ``agent resume`` reaches the real targets while the state, the journal and every message show them
masked. The state directory is hidden from the tools, so nothing the agent runs can read this file.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tools.private_files import private_directory

SECRETS_FILE = "secrets.json"


class RunSecrets(BaseModel):
    journal_key: str = Field(default_factory=lambda: secrets.token_hex(32))
    notify: list[str] = Field(default_factory=list)  # --notify specs as given
    config_overrides: dict[str, Any] = Field(default_factory=dict)  # the command-line layer as given

    @property
    def key(self) -> bytes:
        return bytes.fromhex(self.journal_key)


def read_secrets(state_dir: Path) -> RunSecrets | None:
    """The run's secrets, or None when the file is missing or unreadable."""
    try:
        return RunSecrets.model_validate_json((state_dir / SECRETS_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_secrets(state_dir: Path, value: RunSecrets) -> None:
    """Replace the file atomically, mode 0600 from its creation."""
    private_directory(state_dir)
    temporary = state_dir / f".{SECRETS_FILE}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(value.model_dump(mode="json"), handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, state_dir / SECRETS_FILE)
