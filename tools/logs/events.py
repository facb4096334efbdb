"""Error events in a log: tracebacks, exception lines, stack dumps and native crashes.

:func:`parse_events` reads the window once and returns every error event in log order, each with its
exception type and message (the reason line of a validation error, the embedded error of a wrapper,
never a source line), its frames innermost first, and the rank or process that printed it. Lines
that only echo source code inside a traceback are collected in ``source_lines`` so that signatures do
not mistake ``raise ValueError("No available memory ...")`` for the error itself.

Only lines that can belong to an event are looked at closely (a cheap search first), which keeps the
parse of a multi-megabyte window in the tens of milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from tools.logs.frames import Frame, is_live_dump_frame, parse_frame
from tools.logs.native_reports import crash_banner, native_check, signal_named
from tools.logs.prefixes import LineParts, split_line

EventKind = Literal["exception", "truncated", "stack_dump", "crash"]

_INTERESTING = re.compile(
    r'File ["“]|Traceback|rror|xception|Fatal|SIGSEGV|most recent call|\.py:\d+\)|\.py:\d+(?:\x1b\[[\d;]*m)?, in '
    r"|frame #\d|Thread \d+ \(|encountered !|Failed[:,] |(?:CUDA|Cuda|NCCL) failure |Caught signal |received signal \*"
    r"|Memory access fault by GPU|\] Assertion `"
    r"|\)\[0x[0-9a-f]"
    r"|^\s*\d+\s+0x[0-9a-f]+ \S+\(\)"
)
_EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt)|Exception|KeyError)"
    r"|(?:[a-z_]\w*\.)+(?:errors|exceptions)\.[A-Z]\w*|(?:[a-z_]\w*\.)+[a-z]\w*Error|(?:cuda|hip)Error[A-Z]\w*)"
    r"(?::\s?(?P<message>.*))?$"
)
_INNERMOST_FIRST_HEADER = re.compile(r"\(most recent call first\)|^Thread \d+ \((?:active|idle)[^)]*\)")
# CPython reports an exception in a site hook on two lines and carries on ("Error in sitecustomize; set
# PYTHONVERBOSE for traceback:" then the exception): not a failure of the program.
_STARTUP_HOOK = re.compile(r"Error in (?:site|user)customize; set PYTHONVERBOSE for traceback:")
_CHAIN = re.compile(r"^During handling of the above exception|^The above exception was the direct cause")
_CARET = re.compile(r"^\s*[\^~]+\s*$")
_TRAILING_PUNCTUATION = re.compile(r"[\s,:;.-]+$")
_ECHO = re.compile(
    r"[Ss]ee root cause above|check the stack trace above for the root cause"
    r"|Engine core initiali[sz]ation failed|Engine process failed to start"
    r"|Server process exited with code|WorkerProc initiali[sz]ation failed"
)
# A launcher's report that a child process failed (torch elastic's ChildFailedError): the cause is the child's.
_LAUNCHER_REPORTS = ("ChildFailedError",)
_WRAPPED = re.compile(r"""(?P<type>[A-Z]\w*(?:Error|Exception))\(["'](?P<message>[^"']+)""")
# vLLM's executor quoting a worker's error: "Worker failed with error 'MSG', please check the stack trace above for
# the root cause". The quoted message is the root cause even where the worker's own stack is not in the excerpt.
_WORKER_QUOTE = re.compile(r"Worker failed with error '(?P<message>.*)'(?:, please check the stack trace above[^']*)?$")
_FUTURE = re.compile(r"""exception=(?P<type>[A-Z]\w*(?:Error|Exception))\(["'](?P<message>[^"']+)""")
_VALIDATION_REASON = re.compile(r"^\s*(?:Value|Assertion|Type) error, (?P<reason>.+)")
_MAX_SOURCE_LINES = 3
# Python 3.13 and later print every line of a statement that spans several, each with its carets, and elide the
# middle ("...<3 lines>..."): a frame's source can run to many lines.
_MAX_STATEMENT_LINES = 24
_ELIDED = re.compile(r"^\s*\.\.\.<\d+ lines?>\.\.\.\s*$")
_IPYTHON_ARROW = re.compile(r"^-*> +\d+ ")  # IPython marks the frame's current line: "--> 452     weight_loader(...)"
_MAX_CONTINUATION = 8
_CRASH_PREAMBLE = 20  # lines between a signal report and its Python stack


@dataclass
class ErrorEvent:
    kind: EventKind
    first_index: int  # first line of the event
    index: int  # its most telling line: the exception line, or the first frame when there is none
    type: str | None = None
    message: str = ""
    frames: list[Frame] = field(default_factory=list)  # innermost first
    origin: str | None = None
    chained: bool = False  # raised while handling the event before it
    echo: bool = False  # a consequence that points elsewhere ("see root cause above")
    idle: bool = False  # a stack dump of a thread that was only waiting
    current_thread: bool = False  # the fault handler's "Current thread" stack: the thread that crashed


@dataclass
class LogEvents:
    events: list[ErrorEvent]
    source_lines: set[int]
    ends_in_traceback: bool  # the last printed lines belong to an unfinished or final traceback

    def real(self) -> list[ErrorEvent]:
        return [event for event in self.events if not event.echo and not event.idle]


@dataclass
class _Block:
    kind: EventKind
    first_index: int
    innermost_first: bool
    origin: str | None
    chained: bool
    frames: list[Frame] = field(default_factory=list)
    since_frame: int = 0  # non-frame lines seen since the last frame
    idle: bool = False
    current_thread: bool = False
    type: str | None = None
    message: str = ""


class _Parser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.events: list[ErrorEvent] = []
        self.source_lines: set[int] = set()
        self.block: _Block | None = None
        self.chain_pending = False
        self.last_event_line = -1
        self.interrupted = False  # the last exception was an interrupt, or raised while handling one

    def run(self) -> LogEvents:
        for index, line in enumerate(self.lines):
            if self.block is None and not _INTERESTING.search(line):
                continue
            self.feed(index, line)
        self.close(len(self.lines))
        _crashes_take_the_current_thread(self.events)
        last = len(self.lines) - 1
        while last >= 0 and not self.lines[last].strip():
            last -= 1
        ends = bool(self.events) and self.last_event_line >= last - 2 and self.events[-1].kind != "stack_dump"
        return LogEvents(self.events, self.source_lines, ends)

    def feed(self, index: int, line: str) -> None:
        parts = split_line(line)
        handlers = (
            self.on_frame,
            self.on_header,
            self.on_chain,
            self.on_crash,
            self.on_native_check,
            self.on_exception,
            self.on_future,
        )
        if not any(handler(index, parts) for handler in handlers):
            self.on_other(index, parts.text)

    def on_frame(self, index: int, parts: LineParts) -> bool:
        frame, innermost_first = parse_frame(parts.text)
        if frame is None:
            return False
        if self.block is None:  # a fragment without its header; py-spy frames come from a live dump
            kind: EventKind = "stack_dump" if is_live_dump_frame(parts.text) else "truncated"
            self.block = self.open(index, parts.origin, kind=kind, innermost_first=innermost_first)
        frame.index = index
        self.block.frames.append(frame)
        self.block.since_frame = 0
        return True

    def on_header(self, index: int, parts: LineParts) -> bool:
        position = parts.text.find("Traceback (most recent call last)")
        if position >= 0:
            self.close(index)
            self.block = self.open(index, parts.origin, kind="truncated", innermost_first=False)
            # "Exception in worker ... init_device: NCCL error: ..., Traceback (most recent call last):" names
            # the error in front of the header (after a colon); it stands for the traceback when the log
            # is cut after it. A bare wrapper ("Scheduler hit an exception: Traceback ...") names none.
            lead = _TRAILING_PUNCTUATION.sub("", parts.text[:position]).strip()
            self.block.message = lead if ": " in lead else ""
            return True
        if not _INNERMOST_FIRST_HEADER.search(parts.text):
            return False
        block = self.block
        if block is None or block.kind != "crash" or block.frames:  # a crash keeps its block for its stack
            self.close(index)
            block = self.block = self.open(index, parts.origin, kind="stack_dump", innermost_first=True)
        block.innermost_first = True
        # c10's "Exception raised from F at P:L (most recent call first):" is the backtrace of an error it
        # reports, not a thread caught waiting.
        block.idle = "(idle)" in parts.text or parts.text.lstrip().startswith("Exception raised from")
        block.current_thread = parts.text.lstrip().startswith("Current thread")
        return True

    def on_chain(self, index: int, parts: LineParts) -> bool:
        if not _CHAIN.search(parts.text):
            return False
        self.close(index)
        self.chain_pending = True
        return True

    def on_crash(self, index: int, parts: LineParts) -> bool:
        named = signal_named(parts.text)
        if named is not None and self.block is not None and self.block.kind == "crash" and not self.block.frames:
            self.block.type, self.block.message = named
            return True
        banner = crash_banner(parts.text)
        if banner is None:
            return False
        if self.block is None or self.block.kind != "crash":
            self.close(index)
            self.block = self.open(index, parts.origin, kind="crash", innermost_first=True)
            self.block.type, self.block.message = banner
        return True

    def on_native_check(self, index: int, parts: LineParts) -> bool:
        """A failed check in compiled code, printed just before the process exits: a crash of its own."""
        check = native_check(parts.text)
        if check is None:
            return False
        self.close(index)
        frame = Frame(check.path, check.line, "", index)
        self.events.append(
            ErrorEvent(
                kind="crash",
                first_index=index,
                index=index,
                type=f"{check.kind} error",
                message=check.message,
                frames=[frame],
                origin=parts.origin,
            )
        )
        self.last_event_line = index
        return True

    def on_exception(self, index: int, parts: LineParts) -> bool:
        if parts.level in ("INFO", "DEBUG", "WARNING"):
            return False
        match = _EXCEPTION.match(parts.text.strip())
        if match is None:
            return False
        if self.block is None and index > 0 and _STARTUP_HOOK.match(split_line(self.lines[index - 1]).text):
            return True  # the interpreter reports a failed start-up hook and runs on
        self.finish_exception(index, parts.origin, match)
        return True

    def on_future(self, index: int, parts: LineParts) -> bool:
        """``future: <Future finished exception=ValueError('...')>``: an exception an event loop dropped."""
        future = _FUTURE.search(parts.text)
        if future is None:
            return False
        self.close(index)
        self.events.append(
            ErrorEvent(
                kind="exception",
                first_index=index,
                index=index,
                type=future.group("type"),
                message=future.group("message"),
                origin=parts.origin,
            )
        )
        self.last_event_line = index
        return True

    def on_other(self, index: int, text: str) -> None:
        """A line inside an open block that is not a frame: a source line, a gap, or the block's end."""
        block = self.block
        if block is None:
            return
        if block.kind == "crash" and not block.frames and index - block.first_index <= _CRASH_PREAMBLE:
            return  # register dumps and blank lines between the signal and its Python stack
        if _blank(text):
            if not block.frames:
                self.close(index)
            return
        block.since_frame += 1
        source = bool(
            text.startswith(" ")
            or _CARET.match(text)
            or text.startswith("raise ")
            or _ELIDED.match(text)
            or _IPYTHON_ARROW.match(text)
        )
        limit = _MAX_STATEMENT_LINES if source else _MAX_SOURCE_LINES
        if block.frames and source and block.since_frame <= limit:
            self.source_lines.add(index)
        elif block.since_frame > limit:
            self.close(index)

    def open(self, index: int, origin: str | None, *, kind: EventKind, innermost_first: bool) -> _Block:
        block = _Block(
            kind=kind, first_index=index, innermost_first=innermost_first, origin=origin, chained=self.chain_pending
        )
        self.chain_pending = False
        return block

    def finish_exception(self, index: int, origin: str | None, match: re.Match[str]) -> None:
        block = self.block
        self.block = None
        frames = [] if block is None else block.frames
        innermost_first = block is not None and block.innermost_first
        event = ErrorEvent(
            kind="exception",
            first_index=block.first_index if block else index,
            index=index,
            type=match.group("type"),
            frames=frames if innermost_first else frames[::-1],
            origin=origin or (block.origin if block else None),
            chained=(block.chained if block else self.chain_pending),
        )
        self.chain_pending = False
        event.message = self.message(index, (match.group("message") or "").strip())
        quoted = _WORKER_QUOTE.search(event.message)
        if quoted is not None:
            event.message = quoted.group("message")
        wrapped = _WRAPPED.search(event.message)
        launcher_report = (event.type or "").endswith(_LAUNCHER_REPORTS)
        event.echo = (bool(_ECHO.search(event.message)) and wrapped is None) or launcher_report
        if wrapped is not None and event.type in ("RuntimeError", "Exception"):
            event.type, event.message = wrapped.group("type"), wrapped.group("message")
        interrupted = (event.type or "").rsplit(".", 1)[-1] == "KeyboardInterrupt"
        if interrupted:  # the operator's Ctrl-C: its stack shows where the process was, not what failed
            event.kind = "stack_dump"
            cancelled = self.events[-1] if event.chained and self.events else None
            if cancelled is not None and (cancelled.type or "").endswith("CancelledError"):
                cancelled.kind = "stack_dump"  # the task the Ctrl-C cancelled, reported just before it
        elif event.chained and self.interrupted:  # raised while unwinding after the Ctrl-C
            event.echo = True
        self.interrupted = interrupted or (event.chained and self.interrupted)
        self.events.append(event)
        self.last_event_line = index

    def message(self, index: int, first: str) -> str:
        """The exception message with its continuation lines (multi-line messages, wrapped errors)."""
        pieces = [first]
        own = split_line(self.lines[index])
        header = self.lines[index][: len(self.lines[index]) - len(own.text)]
        for offset in range(1, _MAX_CONTINUATION + 1):
            if index + offset >= len(self.lines):
                break
            line = self.lines[index + offset]
            parts = split_line(line)
            text = parts.text
            if (
                _blank(text)
                or parts.level != own.level
                or (parts.record_start and line[: len(line) - len(text)] != header)  # another record of the log
                or parse_frame(text)[0] is not None
                or "Traceback" in text
                or _CHAIN.search(text)
                or _EXCEPTION.match(text.strip())
            ):
                break
            reason = _VALIDATION_REASON.match(text)
            if reason is not None and len(pieces) == 1 and "validation error" in first:
                return reason.group("reason")
            pieces.append(text.strip())
        return " ".join(piece for piece in pieces if piece)

    def close(self, index: int) -> None:
        block = self.block
        self.block = None
        if block is None or (not block.frames and block.kind != "crash" and not block.message):
            return
        frames = block.frames if block.innermost_first else block.frames[::-1]
        # a crash, or a header that carries the error, is told by its own line; a stack by its innermost frame
        own_line = block.kind == "crash" or bool(block.message)
        telling = frames[0].index if frames and not own_line else block.first_index
        self.events.append(
            ErrorEvent(
                kind=block.kind,
                first_index=block.first_index,
                index=telling,
                type=block.type,
                message=block.message,
                frames=frames,
                origin=block.origin,
                chained=block.chained,
                echo=bool(_ECHO.search(block.message)),
                idle=block.idle,
                current_thread=block.current_thread,
            )
        )
        self.last_event_line = index - 1 - block.since_frame


def _crashes_take_the_current_thread(events: list[ErrorEvent]) -> None:
    """Python's fault handler lists every thread after a fatal error, the crashing one as "Current thread"
    (often after idle helper threads): that stack, not the first one listed, is the crash's."""
    for position, event in enumerate(events):
        if event.kind != "crash":
            continue
        for later in events[position + 1 :]:
            if later.kind != "stack_dump":
                break
            if later.current_thread:
                event.frames, later.idle = later.frames, True
                break


def _blank(text: str) -> bool:
    """Empty once the quoting of a bug report (``>``) is taken away."""
    return not text.strip(" \t>|")


def parse_events(lines: list[str]) -> LogEvents:
    """All error events of the window, in log order."""
    return _Parser(lines).run()
