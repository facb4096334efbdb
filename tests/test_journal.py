"""The journal: one durable, redacted JSON record per line; a torn last line is tolerated."""

from __future__ import annotations

import json
from pathlib import Path

from agent.journal import Journal


def test_records_are_appended_one_per_line_in_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    journal.record("intent", call_id="c1", tool="shell")
    journal.record("result", call_id="c1", tool="shell", result={"ok": True})
    journal.close()
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["intent", "result"]
    assert all("at" in json.loads(line) for line in lines)


def test_torn_last_line_is_skipped_and_the_next_record_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.record("intent", call_id="c1")
    journal.close()
    with open(path, "ab") as handle:
        handle.write(b'{"kind": "result", "call_id": "c1", "res')  # the process died mid-write

    reopened = Journal(path)
    assert [entry["kind"] for entry in reopened.records()] == ["intent"]
    assert [entry["call_id"] for entry in reopened.unfinished_intents()] == ["c1"]
    reopened.record("result", call_id="c1")
    reopened.close()
    assert [entry["kind"] for entry in Journal(path).records()] == ["intent", "result"]
    assert Journal(path).unfinished_intents() == []


def test_secrets_never_reach_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    journal.record(
        "intent",
        arguments={
            "command": "curl -H 'Authorization: Bearer abcdefghijklmnop1234'",
            "env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstu"},
            "max_tokens": 512,
        },
    )
    journal.close()
    text = (tmp_path / "journal.jsonl").read_text()
    assert "abcdefghijklmnop1234" not in text and "hf_abcdefghijklmnopqrstu" not in text
    assert json.loads(text)["arguments"]["max_tokens"] == 512


def test_a_missing_journal_reads_as_empty(tmp_path: Path) -> None:
    assert Journal(tmp_path / "none.jsonl").records() == []
