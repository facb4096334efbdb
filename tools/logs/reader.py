"""Bounded reads of large, growing log files.

Everything here reads from the end or from a known offset, in blocks, with a byte budget, so the cost
depends on what is returned, never on the size of the file (multi-GB engine logs are normal). Lines are
split on ``\\n``; progress bars that redraw with ``\\r`` are reduced to their last frame by
:func:`last_frame`. Standard library only: a remote host's helper runs this module too (regular-expression
filters, which need RE2, live in :mod:`tools.logs.line_filter` and run on the agent's side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BLOCK_BYTES = 64 * 1024


@dataclass
class TailRead:
    lines: list[str]
    start_offset: int  # byte offset of the first returned line
    end_offset: int  # byte offset just past the last returned byte
    file_size: int
    scanned_bytes: int
    reached_start: bool  # the whole file before end_offset was scanned
    line_starts: list[int] = field(default_factory=list)  # byte offset of each returned line


@dataclass
class SinceRead:
    text: str
    start_offset: int
    new_offset: int
    file_size: int
    more_available: bool
    restarted: bool  # the file shrank below the offset (rotated/truncated): reading restarted at 0


def last_frame(line: str) -> str:
    """The text a terminal would show for a line redrawn with carriage returns."""
    if "\r" not in line:
        return line
    frames = [frame for frame in line.split("\r") if frame.strip()]
    return frames[-1] if frames else ""


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_last_lines(
    path: Path, max_lines: int, *, max_bytes: int = 8 * 1024 * 1024, keep: Callable[[str], bool] | None = None
) -> TailRead:
    """The last ``max_lines`` lines (those passing ``keep``), scanning backwards at most ``max_bytes``."""
    size = path.stat().st_size
    position = size
    kept: list[tuple[int, str]] = []  # (offset, line), newest first
    carry = b""  # the possibly partial first line of the region read so far
    at_end = True
    with open(path, "rb") as handle:
        while position > 0 and len(kept) < max_lines and size - position < max_bytes:
            step = min(BLOCK_BYTES, position, max_bytes - (size - position))
            position -= step
            handle.seek(position)
            block = handle.read(step) + carry
            pieces = block.split(b"\n")
            offset = position
            if position > 0:
                carry = pieces.pop(0)
                offset += len(carry) + 1
            else:
                carry = b""
            if at_end and pieces and pieces[-1] == b"":
                pieces.pop()  # the newline that ends the file
            at_end = False
            starts = []
            for piece in pieces:
                starts.append(offset)
                offset += len(piece) + 1
            for piece_start, raw in zip(reversed(starts), reversed(pieces)):  # noqa: B905 (also runs on Python 3.8)
                text = _decode(raw)
                if keep is None or keep(text):
                    kept.append((piece_start, text))
                    if len(kept) >= max_lines:
                        break
    kept.reverse()
    return TailRead(
        lines=[text for _, text in kept],
        start_offset=kept[0][0] if kept else size,
        end_offset=size,
        file_size=size,
        scanned_bytes=size - position,
        reached_start=position == 0,
        line_starts=[start for start, _ in kept],
    )


def read_since(path: Path, offset: int, *, max_bytes: int = 256 * 1024) -> SinceRead:
    """Complete lines written since ``offset`` (at most ``max_bytes``) and the offset to continue from.

    A final line without a newline is left for the next call unless the budget is full of one line.
    """
    size = path.stat().st_size
    restarted = offset > size
    start = 0 if restarted else max(offset, 0)
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(max_bytes)
    boundary = max(data.rfind(b"\n"), data.rfind(b"\r"))
    if boundary >= 0:
        data = data[: boundary + 1]
    elif len(data) < max_bytes:
        data = b""  # an unfinished line; wait for its end
    new_offset = start + len(data)
    return SinceRead(
        text=_decode(data),
        start_offset=start,
        new_offset=new_offset,
        file_size=size,
        more_available=new_offset < size,
        restarted=restarted,
    )


def substring_filter(pattern: str) -> Callable[[str], bool]:
    """A line predicate: the line contains ``pattern``, ignoring case."""
    needle = pattern.lower()
    return lambda line: needle in line.lower()
