"""Bounded log reading: last lines from the end, following by offset, filters, big files."""

from __future__ import annotations

from pathlib import Path

from tools.logs.line_filter import compile_filter
from tools.logs.reader import last_frame, read_last_lines, read_since
from tools.logs.window import read_window


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


def test_last_lines_in_file_order(tmp_path: Path) -> None:
    log = write(tmp_path / "a.log", "".join(f"line {number}\n" for number in range(1, 1001)))
    tail = read_last_lines(log, 3)
    assert tail.lines == ["line 998", "line 999", "line 1000"]
    assert log.read_bytes()[tail.start_offset :].decode().startswith("line 998\n")
    assert tail.end_offset == log.stat().st_size


def test_last_lines_without_final_newline_and_short_files(tmp_path: Path) -> None:
    log = write(tmp_path / "b.log", "alpha\nbeta\ngamma")
    assert read_last_lines(log, 2).lines == ["beta", "gamma"]
    assert read_last_lines(log, 10).lines == ["alpha", "beta", "gamma"]
    assert read_last_lines(write(tmp_path / "empty.log", ""), 5).lines == []


def test_filtered_tail_scans_backwards_until_enough_matches(tmp_path: Path) -> None:
    body = "".join(
        f"INFO step {number}\n" if number % 100 else f"ERROR failure {number}\n" for number in range(1, 5001)
    )
    log = write(tmp_path / "c.log", body)
    keep = compile_filter("error", regex=False)
    assert read_last_lines(log, 2, keep=keep).lines == ["ERROR failure 4900", "ERROR failure 5000"]
    regex_keep = compile_filter(r"failure \d+00$", regex=True)
    assert len(read_last_lines(log, 5, keep=regex_keep).lines) == 5


def test_scan_budget_bounds_the_cost_on_big_files(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "wb") as handle:
        handle.write(b"x" * 100 + b"\n" + (b"steady state line\n" * 400_000))  # about 7 MB
    tail = read_last_lines(log, 10_000_000, max_bytes=64 * 1024, keep=lambda line: "x" in line)
    assert tail.scanned_bytes <= 64 * 1024
    assert not tail.reached_start and tail.lines == []


def test_follow_by_offset_returns_only_complete_new_lines(tmp_path: Path) -> None:
    log = write(tmp_path / "d.log", "first\nsecond\npart")
    chunk = read_since(log, 0)
    assert chunk.text == "first\nsecond\n" and chunk.more_available
    with open(log, "ab") as handle:
        handle.write(b"ial\nthird\n")
    follow = read_since(log, chunk.new_offset)
    assert follow.text == "partial\nthird\n" and not follow.more_available
    assert read_since(log, follow.new_offset).text == ""


def test_follow_restarts_after_truncation(tmp_path: Path) -> None:
    log = write(tmp_path / "e.log", "old line\n" * 100)
    offset = read_since(log, 0).new_offset
    write(log, "fresh\n")
    chunk = read_since(log, offset)
    assert chunk.restarted and chunk.text == "fresh\n"


def test_follow_respects_the_byte_budget(tmp_path: Path) -> None:
    log = write(tmp_path / "f.log", "0123456789\n" * 1000)
    chunk = read_since(log, 0, max_bytes=100)
    assert len(chunk.text) <= 100 and chunk.text.endswith("\n") and chunk.more_available


def test_progress_bars_reduce_to_their_last_frame() -> None:
    assert last_frame("Loading:  10%\rLoading:  55%\rLoading:  60%") == "Loading:  60%"
    assert last_frame("plain") == "plain"


def test_window_keeps_exact_line_numbers_or_locates_from_the_end(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    with open(log, "wb") as handle:
        for number in range(1, 200_001):
            handle.write(f"row {number}\n".encode())
    window = read_window(log, head_bytes=1024, tail_bytes=4096)
    assert not window.whole_file  # the middle was skipped, only its newlines counted
    assert window.lines[-1] == "row 200000" and window.numbers[-1] == 200000
    assert window.numbers[0] == 1
    uncounted = read_window(log, head_bytes=1024, tail_bytes=4096, count_limit_bytes=1024)
    assert uncounted.numbers[-1] is None and uncounted.lines_from_end(len(uncounted.lines) - 1) == 1
    assert uncounted.bytes_read <= 1024 + 4096
