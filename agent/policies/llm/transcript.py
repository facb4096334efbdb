"""The persisted conversation: ``transcript.jsonl`` in the state directory, append-only and redacted.

Records, one JSON object a line: a ``header`` naming the run, every ``turn`` (numbered) as it happens,
and a ``fold`` each time older turns leave the model's window. Loading replays them into the current
window, trimmed to the mark the state document committed (so the transcript and the state agree).
Damage never stops a resume: a torn or unreadable line is skipped, and a transcript that belongs to
another run is moved aside (kept, never overwritten) so the run continues from the state document.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from agent.policies.llm.turns import AssistantTurn, Turn, UserTurn
from tools.document import utc_now
from tools.redact import redact_value

TRANSCRIPT_FILE = "transcript.jsonl"
_TURN = TypeAdapter[AssistantTurn | UserTurn](Turn)


class TranscriptMark(BaseModel):
    """How far the transcript was committed with the last saved decision (kept in the state document)."""

    turns: int = Field(ge=0)
    window_start: int = Field(ge=0)


@dataclass
class LoadedTranscript:
    window: list[AssistantTurn | UserTurn] = field(default_factory=list)
    window_start: int = 0  # index of the window's first turn among all recorded turns
    turns_recorded: int = 0
    skipped_lines: int = 0
    problem: str | None = None  # why earlier turns could not be used, when they could not


class Transcript:
    def __init__(self, state_dir: Path, run_id: str) -> None:
        self.path = state_dir / TRANSCRIPT_FILE
        self.run_id = run_id
        self.turns_recorded = 0
        self._pending: list[dict[str, Any]] = []

    def load(self, committed: TranscriptMark | None = None) -> LoadedTranscript:
        """Read the transcript and return the window it leaves.

        ``committed`` is the mark saved in the state document with the last decision: turns written
        after it belong to a decision that never reached the state (the agent died first) and are
        dropped; later records with the same index replace them. Without a mark, every turn counts and
        the window starts after the last fold record.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return LoadedTranscript()
        except OSError as error:
            return LoadedTranscript(problem=f"the transcript could not be read ({error})")
        turns: dict[int, AssistantTurn | UserTurn] = {}
        window_start, skipped, header_run = 0, 0, None
        for raw in data.splitlines():
            try:
                record = json.loads(raw)
                if record["kind"] == "header":
                    header_run = record.get("run_id")
                elif record["kind"] == "turn":
                    turns[int(record["index"])] = _TURN.validate_python(record["turn"])
                elif record["kind"] == "fold":
                    window_start = int(record["upto"])
            except (ValueError, KeyError, TypeError, ValidationError):
                skipped += 1
        if header_run is not None and header_run != self.run_id:
            aside = self.path.with_name(f"transcript-{header_run}.jsonl")
            os.replace(self.path, aside)
            return LoadedTranscript(
                problem=f"the transcript belonged to run {header_run} and was moved to {aside.name}"
            )
        count = max(turns, default=-1) + 1
        if committed is not None:
            count, window_start = min(count, committed.turns), committed.window_start
        self.turns_recorded = count
        window = [turns[index] for index in range(window_start, count) if index in turns]
        problem = f"{skipped} unreadable transcript lines were skipped" if skipped else None
        return LoadedTranscript(
            window=window,
            window_start=min(window_start, count),
            turns_recorded=count,
            skipped_lines=skipped,
            problem=problem,
        )

    def append_turn(self, turn: AssistantTurn | UserTurn) -> None:
        """Queue a turn; :meth:`flush` writes it."""
        record = {"kind": "turn", "index": self.turns_recorded, "turn": turn.model_dump(mode="json")}
        self._pending.append(record)
        self.turns_recorded += 1

    def record_fold(self, window_start: int, folded_turns: int, summary: str) -> None:
        """Queue the record that the window now starts at turn ``window_start``."""
        self._pending.append({"kind": "fold", "upto": window_start, "folded": folded_turns, "summary": summary})

    def flush(self) -> None:
        """Append the queued records as whole lines and make them durable, with one fsync. The file is
        opened per flush, so nothing stays open between steps."""
        if not self._pending:
            return
        records, self._pending = self._pending, []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = b"".join(
            (json.dumps(redact_value({"at": utc_now(), **record}), ensure_ascii=False) + "\n").encode("utf-8")
            for record in records
        )
        with open(self.path, "ab+") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                header = {"at": utc_now(), "kind": "header", "run_id": self.run_id}
                handle.write((json.dumps(header) + "\n").encode("utf-8"))
            else:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")  # end a torn line so these records start on their own line
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
