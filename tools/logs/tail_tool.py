"""tail_log: the end of a log, or everything written since a byte offset, read from the end."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, model_validator

from tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.hosts.base import Host, LineFilter
from tools.logs.line_filter import compile_filter
from tools.logs.on_host import readable_log, require_log
from tools.logs.reader import last_frame
from tools.processes import resolve_process
from tools.redact import redact_text


class LogTarget(ToolArgs):
    path: str | None = Field(None, description="A log file. Give this or process, not both.")
    process: str | None = Field(
        None,
        description="Name of a managed process (e.g. an engine); its log is "
        "used. Without path and process: the newest engine.",
    )
    host: str | None = Field(
        None, description="Host the path is on (default: the run's first host); a process's log is on its own host."
    )

    @model_validator(mode="after")
    def _one_target(self) -> LogTarget:
        if self.path and self.process:
            raise ValueError("give either path or process, not both")
        return self

    def resolve(self, context: ToolContext) -> tuple[Host, str]:
        """The host and the log's path there (it is read through :func:`tools.logs.on_host.readable_log`, which
        checks where it is); ToolError when it does not exist."""
        if self.path:
            host, path = context.host_named(self.host), self.path
        else:
            record = resolve_process(context.state, self.process, kind=None if self.process else "engine")
            host, path = context.host_of(record), record.log_path
        require_log(host, path)
        return host, path


class TailLogArgs(LogTarget):
    lines: int = Field(50, ge=1, le=5000, description="How many lines to return (from the end).")
    since_offset: int | None = Field(
        None,
        ge=0,
        description="Return what was written after this byte "
        "offset instead of the last lines; pass back new_offset next time.",
    )
    filter: str | None = Field(None, description="Keep only lines containing this text (case-insensitive).")
    regex: bool = Field(False, description="Treat filter as a regular expression (RE2 syntax).")
    max_bytes: int = Field(
        256 * 1024, ge=1024, le=16 * 1024 * 1024, description="Most bytes to scan; bounds the cost on multi-GB logs."
    )


class TailLogOutput(ToolOutput):
    log_path: str
    lines: list[str]
    start_offset: int
    new_offset: int = Field(description="Pass as since_offset to continue from here.")
    file_size: int
    more_available: bool = Field(description="since_offset mode: more bytes remain after new_offset.")
    restarted: bool = Field(False, description="The file shrank below since_offset; read from its start.")
    scan_limited: bool = Field(False, description="The byte budget ended the scan before enough lines.")


class TailLogTool(Tool[TailLogArgs, TailLogOutput]):
    name = "tail_log"
    description = (
        "Read the end of a log file (last N lines) or everything written since a byte offset; reads from "
        "the end, so it is cheap on multi-GB engine logs. Optional filter. Use new_offset to follow a log. "
        "Reads the logs of processes the agent started and configured log directories; other files ask a human."
    )
    args_model = TailLogArgs
    output_model = TailLogOutput
    timeout_seconds: ClassVar[float] = 60.0

    def run(self, args: TailLogArgs, context: ToolContext) -> TailLogOutput:
        host, shown = args.resolve(context)
        with readable_log(host, shown, context) as path:
            return self._read(args, host, shown, path)

    def _read(self, args: TailLogArgs, host: Host, shown: str, path: str) -> TailLogOutput:
        try:
            keep = compile_filter(args.filter, regex=args.regex)
        except re.error as error:
            raise ToolError(f"filter is not a valid regular expression ({error}); fix it or pass regex=false") from None
        if args.since_offset is not None:
            chunk = host.read_since(path, args.since_offset, max_bytes=args.max_bytes)
            lines = [last_frame(line) for line in chunk.text.splitlines()]
            lines = [line for line in lines if keep is None or keep(line)][-args.lines :]
            return TailLogOutput(
                log_path=str(shown),
                lines=_redacted(lines),
                start_offset=chunk.start_offset,
                new_offset=chunk.new_offset,
                file_size=chunk.file_size,
                more_available=chunk.more_available,
                restarted=chunk.restarted,
            )
        tail = host.read_last_lines(
            path,
            args.lines,
            max_bytes=args.max_bytes,
            line_filter=LineFilter(pattern=args.filter, regex=args.regex) if args.filter else None,
        )
        return TailLogOutput(
            log_path=str(shown),
            lines=_redacted([last_frame(line) for line in tail.lines]),
            start_offset=tail.start_offset,
            new_offset=tail.end_offset,
            file_size=tail.file_size,
            more_available=False,
            scan_limited=len(tail.lines) < args.lines and not tail.reached_start,
        )


def _redacted(lines: list[str]) -> list[str]:
    """Redact the lines in one pass (secret patterns never span a line break)."""
    return redact_text("\n".join(lines)).split("\n") if lines else []
