"""The persisted transcript: redacted, append-only, tolerant of damage, trimmed to what the state committed."""

from __future__ import annotations

import json
from pathlib import Path

from agent.policies.llm.transcript import TRANSCRIPT_FILE, Transcript, TranscriptMark
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, ToolResultRecord, UserTurn


def turns(count: int) -> list[AssistantTurn | UserTurn]:
    made: list[AssistantTurn | UserTurn] = []
    for index in range(count // 2):
        call = ToolCallRecord(id=f"c{index}", name="emit", arguments={"n": index})
        made += [
            AssistantTurn(step=index, calls=[call]),
            UserTurn(step=index, results=[ToolResultRecord(call_id=call.id, name="emit", content=f"r{index}")]),
        ]
    return made


def write(tmp_path: Path, count: int, run_id: str = "run1") -> Transcript:
    transcript = Transcript(tmp_path, run_id)
    for turn in turns(count):
        transcript.append_turn(turn)
    transcript.flush()
    return transcript


def test_turns_round_trip_and_folds_set_the_window(tmp_path: Path) -> None:
    transcript = write(tmp_path, 6)
    transcript.record_fold(window_start=2, folded_turns=2, summary="folded two")
    transcript.flush()
    loaded = Transcript(tmp_path, "run1").load()
    assert loaded.turns_recorded == 6 and loaded.window_start == 2 and loaded.problem is None
    assert loaded.window == turns(6)[2:]


def test_turns_after_the_committed_mark_are_dropped_and_overwritten(tmp_path: Path) -> None:
    write(tmp_path, 6)
    mark = TranscriptMark(turns=4, window_start=0)
    reader = Transcript(tmp_path, "run1")
    loaded = reader.load(mark)
    assert loaded.window == turns(6)[:4]
    replacement = AssistantTurn(step=9, text="the decision that really happened")
    reader.append_turn(replacement)
    reader.flush()
    again = Transcript(tmp_path, "run1").load(TranscriptMark(turns=5, window_start=0))
    assert again.window == [*turns(6)[:4], replacement]


def test_a_torn_last_line_is_skipped_and_the_next_record_starts_clean(tmp_path: Path) -> None:
    transcript = write(tmp_path, 4)
    with open(tmp_path / TRANSCRIPT_FILE, "ab") as handle:
        handle.write(b'{"kind": "turn", "index": 4, "turn": {"role": "assis')
    loaded = transcript.load()
    assert loaded.window == turns(4) and loaded.skipped_lines == 1
    transcript.append_turn(AssistantTurn(step=5, text="after the tear"))
    transcript.flush()
    reloaded = Transcript(tmp_path, "run1").load()
    assert reloaded.window[-1] == AssistantTurn(step=5, text="after the tear")


def test_a_transcript_of_another_run_is_moved_aside_not_overwritten(tmp_path: Path) -> None:
    write(tmp_path, 4, run_id="old-run")
    original = (tmp_path / TRANSCRIPT_FILE).read_bytes()
    loaded = Transcript(tmp_path, "new-run").load()
    assert loaded.window == [] and "old-run" in (loaded.problem or "")
    assert (tmp_path / "transcript-old-run.jsonl").read_bytes() == original
    assert not (tmp_path / TRANSCRIPT_FILE).exists()


def test_records_are_redacted_on_disk(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path, "run1")
    secret = "sk-ant-" + "a1B2" * 10
    transcript.append_turn(UserTurn(step=1, notes=[f"ANTHROPIC_API_KEY={secret}"]))
    transcript.flush()
    text = (tmp_path / TRANSCRIPT_FILE).read_text()
    assert secret not in text and "[REDACTED]" in text
    assert [json.loads(line)["kind"] for line in text.splitlines()] == ["header", "turn"]
