"""The state store: atomic saves, previous.json, clear errors, and never overwriting a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.state import SCHEMA_VERSION, ProjectState
from agent.store import StateFileError, StateStore


def test_save_then_load_round_trips_and_keeps_the_previous_version(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state")
    state = ProjectState(goal="serve a model")
    store.save(state)
    state.add_finding("first finding")
    store.save(state)

    assert store.load().findings[0].summary == "first finding"
    previous = json.loads(store.previous_path.read_text())
    assert previous["findings"] == []
    assert not list(store.state_dir.glob(".*.tmp")), "no temporary file is left behind"


def test_an_unchanged_state_is_not_rewritten(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = ProjectState(goal="g")
    store.save(state)
    state.step = 1
    store.save(state)
    store.save(state)  # nothing changed: previous.json must still be the step-0 version
    assert json.loads(store.previous_path.read_text())["step"] == 0
    assert json.loads(store.latest_path.read_text())["step"] == 1


def test_missing_state_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match=str(tmp_path / "latest.json")):
        StateStore(tmp_path).load()


def test_corrupt_state_names_the_file_points_to_previous_and_is_left_untouched(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = ProjectState(goal="g")
    store.save(state)
    state.step = 7
    store.save(state)
    store.latest_path.write_text('{"goal": "g", "step": ', encoding="utf-8")  # torn by a broken disk
    before = store.latest_path.read_bytes()

    with pytest.raises(StateFileError) as raised:
        store.load()

    message = str(raised.value)
    assert str(store.latest_path) in message and "not valid JSON" in message
    assert str(store.previous_path) in message and "is usable (step 0" in message
    assert store.latest_path.read_bytes() == before


def test_invalid_document_and_unusable_previous(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.latest_path.write_text(json.dumps({"goal": "g", "step": "many"}), encoding="utf-8")
    store.previous_path.write_text("garbage", encoding="utf-8")
    with pytest.raises(StateFileError, match=r"step: .*; .*previous.json is not usable either"):
        store.load()


def test_a_newer_schema_is_refused_with_advice(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.latest_path.write_text(json.dumps({"goal": "g", "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(StateFileError, match="newer than this agent"):
        store.load()


def test_unknown_fields_written_by_a_newer_tool_survive_a_save(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.latest_path.write_text(json.dumps({"goal": "g", "extra_section": {"kept": True}}))
    store.save(store.load())
    assert json.loads(store.latest_path.read_text())["extra_section"] == {"kept": True}


def test_secrets_are_masked_on_disk(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    state = ProjectState(goal="g")
    state.add_finding("launched with HF token hf_abcdefghijklmnopqrstuvwx", ["api_key=supersecretvalue"])
    state.environment.packages["tokenizer"] = "1.0"
    store.save(state)
    text = store.latest_path.read_text()
    assert "hf_abcdefghijklmnopqrstuvwx" not in text and "supersecretvalue" not in text
    assert '"tokenizer": "1.0"' in text


def test_archive_moves_the_run_files_aside(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.save(ProjectState(goal="g"))
    store.journal.record("event", event="done")
    archived = store.archive("run1")
    assert sorted(path.name for path in archived.iterdir()) == ["journal.jsonl", "latest.json", "secrets.json"]
    assert not store.has_run()
