"""Classify an engine log into exactly one diagnosis class, with its most telling line and remedies.

Rules, in order:
1. Failure signatures from the library are matched over a bounded head+tail window (harmless lines
   excluded). The highest-priority class wins; within it the earliest line (the root cause, not its
   echoes). If the engine's ready line comes after every failure line, the log is ``healthy``.
2. With speculation on, a mean accept length below :data:`LOW_ACCEPT_LENGTH` is a ``spec_decode_problem``.
3. Hints from the caller (exit code, whether the process is alive) settle logs without a signature: a
   SIGKILL exit is ``process_killed``; any other failed exit is ``unknown``.
4. Otherwise the log is ``healthy`` (ready line), ``loading`` (progress lines), or ``nccl_hang`` when it
   has been silent for ``stale_after_seconds`` right after distributed/NCCL initialisation.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.logs.library import DiagnosisClass, Signature, SignatureLibrary, load_library
from tools.logs.window import LogWindow, read_window

LOW_ACCEPT_LENGTH = 1.3
LAST_LINES = 30
SAMPLE_CHARS = 64 * 1024  # engine detection looks at this much of the head and of the tail
ACCEPT_SCAN_CHARS = 256 * 1024  # acceptance is judged on the most recent decode lines
_SGLANG_MARKS = re.compile(r"sglang|\[TP\d+\]|server_args=ServerArgs|fired up and ready to roll")
_VLLM_MARKS = re.compile(r"vllm|vLLM|\(APIServer pid=|EngineCore|VllmWorker|\[core\.py:\d+\]")
_ACCEPT = re.compile(r"accept len: (?P<value>\d+(?:\.\d+)?)|Mean acceptance length: (?P<vllm>\d+(?:\.\d+)?)")
_EXCEPTION_LINE = re.compile(r"^\s*(?:\S+ )?[\w.]*(?:Error|Exception|Interrupt)\b: ")
_ERRORISH = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|(?:Error|Exception): ")
# SGLang <= 0.5.20 / >= 0.5.21 and vLLM wording of the distributed-init start (from the release data).
_NCCL_INIT = re.compile(
    r"NCCL INFO|Init torch distributed begin|Init parallel begin|"
    r"rank \d+ in world size \d+ is assigned as|init_process_group|ncclCommInitRank"
)

EngineGuess = Literal["sglang", "vllm", "unknown"]


class Remedy(BaseModel):
    id: str
    text: str
    action: dict[str, Any] = Field(default_factory=dict)


class Diagnosis(BaseModel):
    """JSON shape: {"class", "confidence", "line_number", "key_line", "remedies", "engine", ...}."""

    model_config = ConfigDict(serialize_by_alias=True, populate_by_name=True)

    diagnosis_class: DiagnosisClass = Field(alias="class")
    confidence: float
    line_number: int | None = None
    key_line: str | None = None
    remedies: list[Remedy] = Field(default_factory=list)
    engine: EngineGuess = "unknown"
    summary: str = ""
    signature: str | None = None
    evidence: list[str] = Field(default_factory=list)  # other telling lines, "LINE: text"
    lines_from_end: int | None = None
    progress: str | None = None  # the last loading stage seen
    log_path: str | None = None
    log_size_bytes: int = 0
    bytes_read: int = 0
    log_age_seconds: float | None = None


class DiagnosisHints(BaseModel):
    """What the caller knows beyond the log text."""

    engine: Literal["sglang", "vllm"] | None = None
    interconnect: str | None = None  # "pcie" moves NCCL_P2P_DISABLE first for NCCL classes
    exit_code: int | None = None
    process_alive: bool | None = None
    stale_after_seconds: float = 600.0


@dataclass
class _Match:
    signature: Signature
    index: int
    supporters: int = 1


def detect_engine(window: LogWindow) -> EngineGuess:
    sample = window.text[:SAMPLE_CHARS] + window.text[-SAMPLE_CHARS:]
    sglang = len(_SGLANG_MARKS.findall(sample))
    vllm = len(_VLLM_MARKS.findall(sample))
    if sglang == vllm == 0:
        return "unknown"
    return "sglang" if sglang >= vllm else "vllm"


def _first_match(regex: re.Pattern[str], window: LogWindow, library: SignatureLibrary, start_line: int) -> int | None:
    """Index of the first non-benign line at or after ``start_line`` that the regex matches."""
    position = window.text_start_of(start_line)
    while (match := regex.search(window.text, position)) is not None:
        index = window.line_index_at(match.start())
        if not library.is_benign(window.lines[index]):
            return index
        position = window.text_start_of(index + 1)
    return None


def _signature_match(signature: Signature, window: LogWindow, library: SignatureLibrary, start_line: int) -> int | None:
    if signature.only_if_last:
        start_line = max(start_line, len(window.lines) - LAST_LINES)
    indexes = [
        index for regex in signature.regexes if (index := _first_match(regex, window, library, start_line)) is not None
    ]
    return min(indexes) if indexes else None


def _failures(window: LogWindow, library: SignatureLibrary, engine: str | None, start_line: int = 0) -> list[_Match]:
    found: dict[str, _Match] = {}
    for signature in library.signatures:
        if not signature.applies_to(engine):
            continue
        index = _signature_match(signature, window, library, start_line)
        if index is None:
            continue
        current = found.get(signature.diagnosis_class)
        if current is None:
            found[signature.diagnosis_class] = _Match(signature, index)
        else:
            current.supporters += 1
            if (signature.priority, -index) > (current.signature.priority, -current.index):
                current.signature, current.index = signature, index
    return sorted(found.values(), key=lambda match: (match.signature.priority, -match.index), reverse=True)


def _last_match(window: LogWindow, regex: re.Pattern[str]) -> re.Match[str] | None:
    """The last match in the window, searching growing suffixes so that recent matches are cheap."""
    text = window.text
    size = 64 * 1024
    while True:
        start = max(len(text) - size, 0)
        last = None
        for last in regex.finditer(text, start):  # noqa: B007 - only the final match is wanted
            pass
        if last is not None or start == 0:
            return last
        size *= 8


def _last_index(window: LogWindow, regex: re.Pattern[str], keep: Any = None) -> int | None:
    """Index of the last line matching ``regex`` (and ``keep``); per line, for patterns anchored at ^."""
    for index in range(len(window.lines) - 1, -1, -1):
        line = window.lines[index]
        if regex.search(line) and (keep is None or keep(line)):
            return index
    return None


def _last_ready(window: LogWindow, library: SignatureLibrary, engine: str | None) -> int | None:
    best: int | None = None
    for ready in library.ready:
        if engine in ("sglang", "vllm") and ready.engine != engine:
            continue
        match = _last_match(window, ready.regex)
        if match is not None:
            index = window.line_index_at(match.start())
            best = index if best is None else max(best, index)
    return best


def _last_progress(window: LogWindow, library: SignatureLibrary) -> tuple[int, str, str] | None:
    """(line index, stage, message) of the latest loading-progress line."""
    best: tuple[int, str, str] | None = None
    for progress in library.progress:
        match = _last_match(window, progress.regex)
        if match is None:
            continue
        index = window.line_index_at(match.start())
        if best is None or index > best[0]:
            best = (index, progress.stage, progress.describe(match))
    return best


def _low_acceptance(window: LogWindow) -> tuple[int, float] | None:
    values: list[tuple[int, float]] = []
    for match in _ACCEPT.finditer(window.text, max(len(window.text) - ACCEPT_SCAN_CHARS, 0)):
        value = float(match.group("value") or match.group("vllm"))
        values.append((window.line_index_at(match.start()), value))
    recent = values[-20:]
    if len(recent) < 3:
        return None
    mean = sum(value for _, value in recent) / len(recent)
    return (recent[-1][0], mean) if mean < LOW_ACCEPT_LENGTH else None


class Diagnoser:
    """Applies the library to one window; build it with :func:`diagnose_file` or :func:`diagnose_text`."""

    def __init__(self, window: LogWindow, hints: DiagnosisHints, library: SignatureLibrary) -> None:
        self.window = window
        self.hints = hints
        self.library = library
        detected = detect_engine(window)
        self.engine: EngineGuess = hints.engine or detected

    def remedies(self, identifiers: list[str], diagnosis_class: str) -> list[Remedy]:
        ordered = list(dict.fromkeys(identifiers))
        if diagnosis_class in ("nccl_hang", "nccl_error") and "nccl_p2p_disable" in ordered:
            ordered.remove("nccl_p2p_disable")
            position = 0 if self.hints.interconnect == "pcie" else min(1, len(ordered))
            ordered.insert(position, "nccl_p2p_disable")
        return [
            Remedy(
                id=identifier,
                text=self.library.remedies[identifier].text,
                action=self.library.remedies[identifier].action.compact(),
            )
            for identifier in ordered
        ]

    def result(
        self,
        diagnosis_class: DiagnosisClass,
        confidence: float,
        index: int | None,
        summary: str,
        remedies: list[str],
        signature: str | None = None,
    ) -> Diagnosis:
        window = self.window
        progress = _last_progress(window, self.library)
        evidence = []
        if progress is not None and progress[0] != index:
            evidence.append(self._cite(progress[0]))
        return Diagnosis(
            diagnosis_class=diagnosis_class,
            confidence=round(min(confidence, 0.99), 2),
            line_number=window.numbers[index] if index is not None else None,
            key_line=window.lines[index] if index is not None else None,
            remedies=self.remedies(remedies, diagnosis_class),
            engine=self.engine,
            summary=summary,
            signature=signature,
            evidence=evidence,
            lines_from_end=window.lines_from_end(index) if index is not None else None,
            progress=progress[2] if progress else None,
            log_size_bytes=window.file_size,
            bytes_read=window.bytes_read,
        )

    def _cite(self, index: int) -> str:
        number = self.window.numbers[index]
        return f"{number if number is not None else '?'}: {self.window.lines[index]}"

    def _exception_line(self, default: int | None) -> int | None:
        found = _last_index(self.window, _EXCEPTION_LINE, lambda line: not self.library.is_benign(line))
        return found if found is not None else default

    def diagnose(self, log_age_seconds: float | None) -> Diagnosis:
        window = self.window
        engine = None if self.engine == "unknown" else self.engine
        if not window.lines:
            return self.result("unknown", 0.1, None, "The log is empty.", ["keep_waiting"])
        ready = _last_ready(window, self.library, engine)
        # Once the engine said it was ready, only what went wrong afterwards counts.
        failures = _failures(window, self.library, engine, start_line=0 if ready is None else ready + 1)
        if failures:
            best = failures[0]
            signature = best.signature
            index: int | None = best.index
            if signature.prefer_exception_line:
                index = self._exception_line(index)
            confidence = signature.confidence + 0.02 * (best.supporters - 1)
            return self.result(
                signature.diagnosis_class, confidence, index, signature.summary, signature.remedies, signature.id
            )
        acceptance = _low_acceptance(window)
        if acceptance is not None:
            return self.result(
                "spec_decode_problem",
                0.6,
                acceptance[0],
                f"Speculative decoding accepts almost nothing (mean accept length "
                f"{acceptance[1]:.2f}, 1.0 means no gain).",
                ["check_draft_model", "disable_speculation"],
            )
        return self._without_signature(ready, log_age_seconds)

    def _without_signature(self, ready: int | None, log_age_seconds: float | None) -> Diagnosis:
        window, hints = self.window, self.hints
        last = len(window.lines) - 1
        if hints.exit_code is not None and hints.exit_code in (-9, 137):
            return self.result(
                "process_killed", 0.7, last, "The process was killed with SIGKILL.", ["check_host_memory"]
            )
        if hints.exit_code not in (None, 0) or (hints.process_alive is False and ready is None):
            index = self._exception_line(last)
            return self.result(
                "unknown", 0.3, index, "The process ended without a recognised cause.", ["inspect_traceback"]
            )
        if ready is not None:
            return self.result("healthy", 0.9, ready, "The engine reported ready; no failure followed.", [])
        progress = _last_progress(window, self.library)
        stale = log_age_seconds is not None and log_age_seconds >= hints.stale_after_seconds
        nccl_init = _last_match(window, _NCCL_INIT)
        tail_is_nccl_init = nccl_init is not None and (
            (progress is not None and progress[1] == "distributed_init")
            or _NCCL_INIT.search(window.lines[last]) is not None
        )
        if stale and tail_is_nccl_init and nccl_init is not None:
            index = window.line_index_at(nccl_init.start())
            return self.result(
                "nccl_hang",
                0.6,
                index,
                f"No output for {log_age_seconds:.0f} s right after distributed/NCCL "
                "initialisation: collective set-up is probably stuck.",
                ["nccl_p2p_disable", "nccl_debug_info", "enable_p2p_check"],
            )
        if progress is not None:
            confidence = 0.4 if stale else 0.7
            quiet = f" No output for {log_age_seconds:.0f} s; check CPU/IO/GPU counters." if stale else ""
            return self.result(
                "loading", confidence, progress[0], f"Still starting: {progress[2]}.{quiet}", ["keep_waiting"]
            )
        if _last_index(window, _ERRORISH, lambda line: not self.library.is_benign(line)) is not None:
            return self.result(
                "unknown",
                0.3,
                self._exception_line(last),
                "Errors were logged; none matches a known signature.",
                ["inspect_traceback"],
            )
        return self.result("loading", 0.5, last, "The engine is starting; no loading milestone yet.", ["keep_waiting"])


def diagnose_text(text: str, hints: DiagnosisHints | None = None, library: SignatureLibrary | None = None) -> Diagnosis:
    """Diagnose log text held in memory (line numbers start at 1)."""
    lines = text.splitlines()
    offsets: list[int] = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line.encode()) + 1
    window = LogWindow(
        lines=lines,
        numbers=list(range(1, len(lines) + 1)),
        offsets=offsets,
        file_size=len(text.encode()),
        bytes_read=len(text.encode()),
        whole_file=True,
    )
    return Diagnoser(window, hints or DiagnosisHints(), library or load_library()).diagnose(None)


def diagnose_file(
    path: Path,
    hints: DiagnosisHints | None = None,
    library: SignatureLibrary | None = None,
    *,
    tail_bytes: int | None = None,
    head_bytes: int | None = None,
) -> Diagnosis:
    """Diagnose a log file reading only a bounded head and tail (see :mod:`tools.logs.window`)."""
    sizes: dict[str, int] = {}
    if tail_bytes is not None:
        sizes["tail_bytes"] = tail_bytes
    if head_bytes is not None:
        sizes["head_bytes"] = head_bytes
    window = read_window(path, **sizes)
    age = max(time.time() - path.stat().st_mtime, 0.0)
    diagnosis = Diagnoser(window, hints or DiagnosisHints(), library or load_library()).diagnose(age)
    diagnosis.log_path = str(path)
    diagnosis.log_age_seconds = round(age, 1)
    return diagnosis
