"""A bounded view of a log for diagnosis: its head and its tail, with line numbers where cheap.

Diagnosis reads at most ``head_bytes + tail_bytes`` (plus, for files up to ``count_limit_bytes``, a
newline count of the skipped middle so that line numbers stay exact). Above that limit line numbers of
tail lines are None and ``lines_from_end`` locates them instead.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from tools.logs.reader import last_frame

DEFAULT_HEAD_BYTES = 256 * 1024
DEFAULT_TAIL_BYTES = 4 * 1024 * 1024
DEFAULT_COUNT_LIMIT_BYTES = 64 * 1024 * 1024
_COUNT_BLOCK = 8 * 1024 * 1024


@dataclass
class LogWindow:
    lines: list[str]
    numbers: list[int | None]  # 1-based line numbers in the file, None when not counted
    offsets: list[int]  # byte offset of each line in the file
    file_size: int
    bytes_read: int
    whole_file: bool
    head_line_count: int = 0  # lines taken from the head when the middle was skipped
    text: str = ""
    _starts: list[int] = field(default_factory=list)  # offset of each line inside ``text``

    def __post_init__(self) -> None:
        self.lines = [last_frame(line) for line in self.lines]
        self.text = "\n".join(self.lines)
        position = 0
        for line in self.lines:
            self._starts.append(position)
            position += len(line) + 1

    def line_index_at(self, text_position: int) -> int:
        return bisect.bisect_right(self._starts, text_position) - 1

    def text_start_of(self, index: int) -> int:
        return self._starts[index] if index < len(self._starts) else len(self.text)

    def lines_from_end(self, index: int) -> int | None:
        """1 for the file's last line; None for head lines when the middle was skipped."""
        if not self.whole_file and index < self.head_line_count:
            return None
        return len(self.lines) - index


def _split(data: bytes, base_offset: int) -> tuple[list[str], list[int]]:
    lines: list[str] = []
    offsets: list[int] = []
    position = base_offset
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    for piece in pieces:
        lines.append(piece.decode("utf-8", errors="replace"))
        offsets.append(position)
        position += len(piece) + 1
    return lines, offsets


def _count_newlines(path: Path, end: int) -> int:
    total = 0
    with open(path, "rb") as handle:
        remaining = end
        while remaining > 0:
            block = handle.read(min(_COUNT_BLOCK, remaining))
            if not block:
                break
            total += block.count(b"\n")
            remaining -= len(block)
    return total


def read_window(
    path: Path,
    *,
    head_bytes: int = DEFAULT_HEAD_BYTES,
    tail_bytes: int = DEFAULT_TAIL_BYTES,
    count_limit_bytes: int = DEFAULT_COUNT_LIMIT_BYTES,
) -> LogWindow:
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if size <= head_bytes + tail_bytes:
            data = handle.read(size)
            lines, offsets = _split(data, 0)
            return LogWindow(
                lines=lines,
                numbers=list(range(1, len(lines) + 1)),
                offsets=offsets,
                file_size=size,
                bytes_read=size,
                whole_file=True,
            )
        head = handle.read(head_bytes)
        head = head[: head.rfind(b"\n") + 1]
        tail_start = size - tail_bytes
        handle.seek(tail_start)
        tail = handle.read(tail_bytes)
    cut = tail.find(b"\n") + 1  # drop the partial first line
    tail_start += cut
    tail = tail[cut:]
    head_lines, head_offsets = _split(head, 0)
    tail_lines, tail_offsets = _split(tail, tail_start)
    numbers: list[int | None] = list(range(1, len(head_lines) + 1))
    extra_read = 0
    if tail_start <= count_limit_bytes:
        first_tail_number = _count_newlines(path, tail_start) + 1
        extra_read = tail_start
        numbers += list(range(first_tail_number, first_tail_number + len(tail_lines)))
    else:
        numbers += [None] * len(tail_lines)
    return LogWindow(
        lines=head_lines + tail_lines,
        numbers=numbers,
        offsets=head_offsets + tail_offsets,
        file_size=size,
        bytes_read=len(head) + tail_bytes + extra_read,
        whole_file=False,
        head_line_count=len(head_lines),
    )
