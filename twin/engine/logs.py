"""Log lines in each engine's own format, written to stderr (the launcher sends it to the log file).

SGLang: ``[YYYY-MM-DD HH:MM:SS TP0] message`` [sgl-0.5.8 utils/common.py logging config].
vLLM 0.33: ``(APIServer pid=N) INFO MM-DD HH:MM:SS [file.py:line] message``; engine-core and worker
lines carry ``(EngineCore_DP0 pid=N)`` / ``(Worker_TP0 pid=N)``.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from typing import TextIO


class EngineLog:
    def __init__(self, engine: str, stream: TextIO | None = None, values: dict[str, str] | None = None) -> None:
        self.engine = engine
        self.stream = stream or sys.stderr
        self.pid = os.getpid()
        self.values = dict(values or {})

    def _stamp(self) -> str:
        now = dt.datetime.now()
        return now.strftime("%Y-%m-%d %H:%M:%S") if self.engine == "sglang" else now.strftime("%m-%d %H:%M:%S")

    def prefix(
        self,
        rank: int | None = 0,
        level: str = "INFO",
        where: str = "core.py:100",
        process: str | None = None,
    ) -> str:
        if self.engine == "sglang":
            return f"[{self._stamp()}{'' if rank is None else f' TP{rank}'}] "
        name = process or ("APIServer" if rank is None else f"Worker_TP{rank}")
        return f"({name} pid={self.pid}) {level} {self._stamp()} [{where}] "

    def write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def info(self, message: str, rank: int | None = 0, where: str = "core.py:100", process: str | None = None) -> None:
        self.write(self.prefix(rank, "INFO", where, process) + message)

    def warning(self, message: str, rank: int | None = 0, where: str = "core.py:100") -> None:
        self.write(self.prefix(rank, "WARNING", where) + message)

    def expand(self, line: str) -> str:
        """Fill the placeholders of scenario log lines (unknown braces are left as they are)."""
        replacements = {
            "{prefix}": self.prefix(0),
            "{main_prefix}": self.prefix(None),
            "{error_prefix}": self.prefix(0, "ERROR", "core.py:708", "EngineCore_DP0"),
            "{main_error_prefix}": self.prefix(None, "ERROR", "api_server.py:1896"),
            **{"{" + key + "}": value for key, value in self.values.items()},
        }
        for placeholder, value in replacements.items():
            line = line.replace(placeholder, value)
        return line

    def lines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(self.expand(line))


def progress_bar(description: str, done: int, total: int, elapsed: float, unit_seconds: float) -> str:
    """A tqdm line as the engines print it.

    E.g. ``Loading safetensors checkpoint shards:  42% Completed | 27/64 [...]``
    (SGLang ``srt/model_loader/weight_utils.py``).
    """
    percent = 100.0 * done / total if total else 100.0
    remaining = unit_seconds * (total - done)

    def clock(seconds: float) -> str:
        minutes, secs = divmod(int(seconds), 60)
        return f"{minutes:02d}:{secs:02d}" if minutes < 60 else f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"

    rate = f"{unit_seconds:.2f}s/it" if done else "?it/s"
    timing = f"[{clock(elapsed)}<{clock(remaining)}, {rate}]"
    return f"{description}: {percent:3.0f}% Completed | {done}/{total} {timing}"
