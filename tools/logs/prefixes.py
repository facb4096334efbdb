"""Taking a log line apart: the decorations around the text an engine wrote, and the text itself.

Engine logs reach diagnosis wrapped in layers: terminal colour codes, ``docker compose`` service
columns, quoting from a bug report, timestamps, log-level headers (``ERROR 05-23 09:31:47 [core.py:396]``,
``ERROR:``),
process tags (``(EngineCore_DP0 pid=123)``, ``(VllmWorker rank=0 pid=9)``) and rank tags (``[rank1]:``,
``[2025-03-11 15:02:53 TP3]``). :func:`split_line` peels them off in any order and returns the message
with the rank or process that wrote it, so that a traceback printed by eight ranks at once can be
read as eight tracebacks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COLOUR = re.compile(r"(?:\x1b|\^\[|#033)?\[(?:\d{1,3};)*\d{1,3}m")
# Each pattern is anchored at the start; group "origin" names the writer when the prefix says so. The flag
# marks the log headers that start a new record (a line without one continues the record before it).
_PREFIXES: list[tuple[re.Pattern[str], bool]] = [
    (re.compile(r"[\w.-]+\s+\| "), False),  # docker compose service column
    (re.compile(r"(?:> ?)+(?=\S)"), False),  # quoted in a bug report
    (re.compile(r"\*\*(?=[A-Za-z])"), False),  # made bold in a bug report
    (re.compile(r"\s*\| "), False),  # table-style pasting
    (re.compile(r"\[?\d{4}-\d\d-\d\dT[\d:.]+Z\]? ?"), False),  # ISO timestamps of log collectors
    (re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+"), False),  # short collector timestamps
    (re.compile(r"\s*\((?P<origin>[^()]*?pid=\d+[^()]*|raylet)\)\s?"), False),  # (EngineCore_DP0 pid=1), (raylet)
    (re.compile(r"\[(?P<origin>rank\d+)\]:\s?"), False),  # torch elastic / c10d rank prefix
    (re.compile(r"\[(?P<origin>Stage-\d+)\] "), False),  # vLLM-Omni's stage of a multi-stage pipeline
    (re.compile(r"\[(?P<origin>\d+,\d+)\]<std(?:out|err)>:\s?"), False),  # mpirun --tag-output: [job,rank]<stdout>:
    (re.compile(r"(?P<origin>\d{1,4}): "), False),  # Slurm's srun --label: "0: " (the task's rank)
    # vLLM's header; its plugins (vllm-ascend) print the year too: "ERROR 2025-10-25 15:32:13.272 [file.py:597]"
    (
        re.compile(
            r"(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL|WARN) (?:\d{4}-)?\d\d-\d\d [\d:.]+ \[?[\w./-]+:\d+\]\s?"
        ),
        True,
    ),
    (re.compile(r"\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?P<origin> (?:[A-Z]{2,3}\d+ ?)+)?\]\s?"), True),  # SGLang
    # Python logging's default and uvicorn's "LEVEL:" column, also repeated on every line of a logged traceback
    (re.compile(r"(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+(?=\S)"), False),
    (re.compile(r"\d{4}-\d\d-\d\d [\d:,.]+ - [\w.]+ - (?P<level>[A-Z]+) - "), True),  # Python logging format
    (re.compile(r"\[\d{4}-\d\d-\d\d [\d:,]+ [A-Z] \d+ \d+\] [\w.]+:\d+: "), False),  # Ray's C++ logger
    # PyTorch's C++ logger: [W609 06:57:47.81 file.cpp:877], [E130 18:11:34.7 file.cpp:143] (month without its zero)
    (re.compile(r"\[(?P<severity>[IWEF])\d{3,4} [\d:.]+ [^\]]*\]\s?"), True),
    # glog's format (PyTorch's C++ logger without brackets): "I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] "
    (re.compile(r"(?P<severity>[IWEF])\d{4} [\d:.]+ +\d+ [\w.-]+:\d+\] "), True),
    # Open MPI's tag on its signal handler's lines: "[host:pid] *** Process received signal ***"
    (re.compile(r"\[(?P<origin>(?![\w.-]*\.py:)[\w.-]+:\d+)\] "), False),
    # FastChat's logger (and the tools built on it): "date | LEVEL | logger | ". Its loggers named after a redirected
    # stream log every line of that stream at one level ("| ERROR | stderr |" for a progress bar): a tag, not a level.
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| [A-Z]+ \| std(?:err|out) \| ?"), True),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| (?P<level>[A-Z]+) \| [\w.]+ \| ?"), True),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? "), False),  # a plain date and time
]
_SEVERITY = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


@dataclass(frozen=True)
class LineParts:
    text: str  # what the program wrote, prefixes removed
    origin: str | None  # "TP3", "rank1", "EngineCore_DP0 pid=1", ...
    level: str | None  # INFO / WARNING / ERROR when the prefix carries one
    record_start: bool  # a log header started this line (not a continuation of the previous record)


def split_line(line: str) -> LineParts:
    """The message of one log line and who wrote it; cheap for lines without decorations."""
    text = _COLOUR.sub("", line) if ("[" in line and "m" in line) else line
    origin: str | None = None
    level: str | None = None
    record_start = False
    for _ in range(8):
        for pattern, starts_record in _PREFIXES:
            match = pattern.match(text)
            if match is None or match.end() == 0:
                continue
            groups = match.groupdict()
            if groups.get("origin"):
                origin = groups["origin"].strip()
            if groups.get("level"):
                level = groups["level"]
            elif groups.get("severity"):
                level = _SEVERITY[groups["severity"]]
            record_start = record_start or starts_record
            text = text[match.end() :]
            break
        else:
            break
    return LineParts(text=text, origin=origin, level=level, record_start=record_start)
