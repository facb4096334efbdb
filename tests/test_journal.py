"""The journal: one durable, redacted JSON record per line; a torn last line is tolerated."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.journal_writer import KEY

from agent.journal import Journal, last_chain
from agent.tamper import journal_problems


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


def _kinds(path: Path) -> list[str]:
    return [entry["kind"] for entry in Journal(path).records()]


def test_interrupts_during_writes_never_break_the_agents_own_chain(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM landing just after a record reached the file (before the journal knew it) once made
    the next record look inserted, and a resumed run asked whether someone had tampered with the journal.
    Each writer records the interrupts it catches; one that dies of an interrupt elsewhere is started again on
    the same journal, as a resumed run is."""
    path, rng, exits, writers = tmp_path / "journal.jsonl", random.Random(7), set(), 0
    # On a loaded host a writer can die of its first interrupt before it writes anything more; more writers are
    # started then, until enough interrupts landed during writes (the count is a behaviour, not a timing).
    while writers < 8 or (_kinds(path).count("interrupted") < 20 and writers < 200):
        writer = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "support" / "journal_writer.py"), str(path), "200"],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        while writer.poll() is None:
            time.sleep(rng.uniform(0.0005, 0.004))
            with contextlib.suppress(ProcessLookupError):
                writer.send_signal(signal.SIGINT)
        exits.add(writer.wait())
        writer.stdout.close()
        writers += 1
    kinds = _kinds(path)
    assert exits <= {0, -signal.SIGINT} and kinds.count("start") == writers
    assert kinds.count("interrupted") >= 20, kinds.count("interrupted")
    assert journal_problems(path, KEY, last_chain(path)) == []
