"""Whole-log signals that are not errors: which engine wrote it, its ready line, loading progress, the
speculative acceptance rate."""

from __future__ import annotations

import re
from typing import Literal

from tools.logs.library import SignatureLibrary
from tools.logs.window import LogWindow

EngineGuess = Literal["sglang", "vllm", "unknown"]
LOW_ACCEPT_LENGTH = 1.3
SAMPLE_CHARS = 64 * 1024  # engine detection looks at this much of the head and of the tail
ACCEPT_SCAN_CHARS = 256 * 1024  # acceptance is judged on the most recent decode lines
# Three readings, or fewer that together report this many drafted tokens (vLLM's metrics line sums an interval).
ACCEPT_READINGS = 3
ACCEPT_DRAFTED_TOKENS = 1000
WARMUP_LOOKBACK_LINES = 3  # the warm-up's result is logged just before the ready line
# The engines' own wording: SGLang's start-up milestones and rank prefixes, vLLM's process prefixes and its
# log format ("INFO 11-01 23:16:33 file.py:56]").
_SGLANG_MARKS = re.compile(
    r"sglang|\bTP\d+\]|server_args=ServerArgs|fired up and ready to roll|Load weight (?:begin|end)\."
    r"|Memory pool end\.|Capture cuda graph (?:begin|end)\.|max_total_num_tokens=|\[gpu_id=\d+\]"
)
_VLLM_MARKS = re.compile(
    r"vllm|vLLM|\(APIServer pid=|EngineCore|VllmWorker|\[core\.py:\d+\]"
    r"|(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d \[?[\w.]+\.py:\d+\]"
)
# A just-in-time kernel build under way (FlashInfer without prebuilt kernels, a torch extension, TileLang, ninja,
# nvcc, ptxas): it can keep a start-up silent for minutes.
KERNEL_BUILD_LINE = re.compile(
    r"using JIT backend|JIT compil|[Bb]uilding (?:extension|kernels?|JIT module)|ninja -v|ninja: |\bnvcc |\bptxas "
    r"|[Cc]ompil(?:e|es|ing) (?:the )?kernels?\b|begins to compile|JIT Pre-Compile session"
)
# What vLLM's API server answers or logs by itself, also when the engine behind it has died or stalled: any GET
# (probes, metrics scrapes, the list of models, a client polling a job's status: generation is always a POST), and
# its periodic statistics.
SELF_REPORT = re.compile(r'"GET /[^"]*" \d{3}|Engine \d+: Avg ')
_ACCEPT = re.compile(
    r"accept len: (?P<value>\d+(?:\.\d+)?)"
    r"|Mean acceptance length: (?P<vllm>\d+(?:\.\d+)?)(?:[^\n]*?Drafted: (?P<drafted>\d+) tokens)?"
    # vLLM's first engine reports a rate (accepted / drafted) and the tokens drafted so far:
    # "Draft acceptance rate: 0.000, ..., Number of draft tokens tokens: 42272"
    # (vLLM's later engine ends its line with "Avg Draft acceptance rate: 0.7%", a percentage: not this one)
    r"|(?<!Avg )Draft acceptance rate: (?P<rate>[01]\.\d+)(?![\d%])"
    r"(?:[^\n]*?Number of speculative tokens: (?P<lookahead>\d+))?"
    r"(?:[^\n]*?Number of draft tokens(?: tokens)?: (?P<cumulative>\d+))?"
)


def detect_engine(window: LogWindow) -> EngineGuess:
    sample = window.text[:SAMPLE_CHARS] + window.text[-SAMPLE_CHARS:]
    sglang = len(_SGLANG_MARKS.findall(sample))
    vllm = len(_VLLM_MARKS.findall(sample))
    if sglang == vllm == 0:
        return "unknown"
    return "sglang" if sglang >= vllm else "vllm"


def last_match(window: LogWindow, regex: re.Pattern[str]) -> re.Match[str] | None:
    """The last match in the window, searching growing suffixes so that recent matches are cheap."""
    text = window.text
    size = SAMPLE_CHARS
    while True:
        start = max(len(text) - size, 0)
        last = None
        for last in regex.finditer(text, start):  # noqa: B007 - only the final match is wanted
            pass
        if last is not None or start == 0:
            return last
        size *= 8


def last_ready(window: LogWindow, library: SignatureLibrary, engine: str | None) -> int | None:
    best: int | None = None
    for ready in library.ready:
        if engine in ("sglang", "vllm") and ready.engine != engine:
            continue
        match = last_match(window, ready.regex)
        if match is not None:
            index = window.line_index_at(match.start())
            best = index if best is None else max(best, index)
    return best


def ready_after_failed_warmup(window: LogWindow, library: SignatureLibrary, ready: int) -> bool:
    """True when the engine's own warm-up failure stands just before its ready line: SGLang prints "ready to
    roll" after a failed disaggregation warm-up too, and marks the server unhealthy."""
    before = window.lines[max(ready - WARMUP_LOOKBACK_LINES, 0) : ready]
    warmup = [signature for signature in library.signatures if signature.id == "engine-warmup-failed"]
    return any(regex.search(line) for signature in warmup for regex in signature.regexes for line in before)


def last_progress(window: LogWindow, library: SignatureLibrary) -> tuple[int, str, str] | None:
    """(line index, stage, message) of the latest loading-progress line."""
    best: tuple[int, str, str] | None = None
    for progress in library.progress:
        match = last_match(window, progress.regex)
        if match is None:
            continue
        index = window.line_index_at(match.start())
        if best is None or index > best[0]:
            best = (index, progress.stage, progress.describe(match))
    return best


def low_acceptance(window: LogWindow) -> tuple[int, float] | None:
    """The line and mean of the recent acceptance lengths when they are low and the sample is large enough."""
    values: list[tuple[int, float, int]] = []
    for match in _ACCEPT.finditer(window.text, max(len(window.text) - ACCEPT_SCAN_CHARS, 0)):
        if match.group("rate") is not None:  # a rate over k drafted tokens a step: 1 + rate * k tokens a step
            value = 1.0 + float(match.group("rate")) * int(match.group("lookahead") or 1)
            drafted = int(match.group("cumulative") or 0)  # a running total, so the last reading counts alone
            values = [(line, length, 0) for line, length, _ in values]
            values.append((window.line_index_at(match.start()), value, drafted))
            continue
        value = float(match.group("value") or match.group("vllm"))
        values.append((window.line_index_at(match.start()), value, int(match.group("drafted") or 0)))
    recent = values[-20:]
    if len(recent) < ACCEPT_READINGS and sum(drafted for _, _, drafted in recent) < ACCEPT_DRAFTED_TOKENS:
        return None
    mean = sum(value for _, value, _ in recent) / len(recent)
    return (recent[-1][0], mean) if mean < LOW_ACCEPT_LENGTH else None


# An offline batch's progress bar at its end: every prompt processed ("Processed prompts: 100%|...| 4/4 [...]").
_OFFLINE_DONE = re.compile(r"Processed prompts: 100%\|[^|\n]*\| (?P<done>\d+)/(?P=done) ")


def offline_batch_done(window: LogWindow, error_lines: list[int]) -> int | None:
    """The line where an offline run finished its last batch when no error with a traceback or exception line
    (``error_lines``) follows it: what the engine reports afterwards (a worker "died" as the interpreter tears the
    processes down) is the end of a run that did its work."""
    done = last_match(window, _OFFLINE_DONE)
    if done is None:
        return None
    index = window.line_index_at(done.start())
    return None if any(line > index for line in error_lines) else index
