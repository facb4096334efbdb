"""How a run ended, as its log tells: an operator's interrupt or termination signal, an orderly shutdown of the
HTTP server or of the engine core, the engine core alone ending on a signal while the server went on, or the exit line
the agent's process supervisor writes.

An operator's signal is one the engine reports receiving, unless the engine's own teardown sent it (its process
manager signalling its children) or only a child reports it while the server never started a shutdown (the child
was signalled alone, from outside). Without a ready line in the window, the HTTP server's own shutdown still shows a
server that was up.
"""

from __future__ import annotations

import re

from tools.hosts.supervise import LOG_PREFIX
from tools.logs.library import SignatureLibrary
from tools.logs.prefixes import split_line
from tools.logs.window import LogWindow

# Written by tools/hosts/supervise.py (``describe_exit``) when the process it runs ends.
_SUPERVISOR_EXIT = re.compile(
    re.escape(LOG_PREFIX) + r" process \d+ (?:exited with code (?P<code>-?\d+)|killed by \w+ \((?P<signal>\d+)\))"
)
# The engine saying it received an operator's interrupt or termination signal. A debugger's "received signal
# SIGINT, Interrupt." is the operator pausing a live process to read its stack, not stopping it.
_OPERATOR_SIGNAL = re.compile(
    r"received signal=?\s*SIG(?:INT(?!, Interrupt\.)|TERM)|[Rr]eceived SIG(?:INT|TERM)|\bSIG(?:INT|TERM) received\b"
    r"|\^C|(?<!raise )KeyboardInterrupt|: line \d+: +\d+ Terminated\b|WorkerProc was terminated"
    # PyTorch's elastic launcher (torchrun) stopping its workers on the signal it got (2 SIGINT, 15 SIGTERM).
    r"|Received (?:2|15) death signal|SignalException: Process \d+ got signal: (?:2|15)\b"
)
# The HTTP server's own shutdown (vLLM's launcher, uvicorn): a server that was up, even where the excerpt begins later.
_SERVER_SHUTDOWN = re.compile(
    r"Shutting down FastAPI HTTP server|Waiting for application shutdown|Application shutdown complete"
    r"|Finished server process \[|Waiting for connections to close"
)
# vLLM's engine core stopping in order when asked ("Shutdown initiated (timeout=0)", then "Shutdown complete"): an
# engine that was up; the client's report right after that the engine core "died unexpectedly" is that stop, seen
# from the other side.
_ENGINE_SHUTDOWN = re.compile(r"\] Shutdown (?:initiated \(timeout=\d+\)|complete)\s*$")
# The engine's own process manager signalling its children as it tears down after a failure: a child's "received
# signal=SIGTERM" that follows is that teardown, not an operator's stop, unless the server's own signal handler
# reported a stop first.
_SELF_SENT = re.compile(r"send sig(?:term|int) to process")
_SERVER_TRIGGER = re.compile(r"shutdown triggered")
# SGLang draining its requests after a termination signal, before it exits.
_DRAINING = re.compile(r"Gracefully exiting\.\.\. remaining number of requests \d+")
# Every operator-signal line holds one of these words: a literal search finds candidates fast in a big window.
_SIGNAL_WORDS = re.compile(
    r"SIGINT|SIGTERM|\^C|KeyboardInterrupt|Terminated|WorkerProc was terminated|death signal|got signal"
)
# vLLM's engine core reporting the termination signal it got (its handler raises SystemExit, logged at DEBUG level as
# "EngineCore exiting."), and the API server taking a request: the server went on after the core was gone.
_CORE_EXITING = re.compile(r"\] EngineCore exiting\.\s*$")
_REQUEST_TAKEN = re.compile(r"\] Added request |\"POST /v1/")
# vLLM's worker reporting the termination signal it got (SIGTERM or SIGINT, raised as SystemExit): one worker alone
# was signalled from outside; several at once are the engine stopped as a whole.
_WORKER_TERMINATED = "WorkerProc was terminated"
# A child process's end as its parent reports it, with the signal as a negative exit code.
_CHILD_EXIT_CODE = re.compile(r"\b(?:died|exited|terminated)\b[^\n]*?\bexit ?code:? ?-(\d+)\b")
_STOP_SIGNALS = frozenset({2, 15})  # SIGINT, SIGTERM


def orderly_shutdown(window: LogWindow, library: SignatureLibrary, ready: int | None) -> int | None:
    """Index of the first shutdown line or operator's signal after the ready line (None when there is neither).
    Without a ready line the excerpt may begin after it: the HTTP server's shutdown then shows a server that was up;
    an operator's signal before it ended the start-up."""
    start = 0 if ready is None else ready + 1
    if ready is not None and (draining := _draining_since_signal(window, ready)) is not None:
        return draining
    signalled = _first_signal(window, start)
    for index in range(start, len(window.lines) if signalled is None else signalled):
        line = window.lines[index]
        if (ready is not None or _SERVER_SHUTDOWN.search(line)) and any(
            shutdown.regex.search(line) for shutdown in library.shutdown
        ):
            return index
        if _ENGINE_SHUTDOWN.search(line):
            return index
    return signalled


def _draining_since_signal(window: LogWindow, ready: int) -> int | None:
    """An operator's signal before the ready line that SGLang answered by draining its requests ("Gracefully
    exiting... remaining number of requests 3"): the batches it decodes meanwhile are the stop's, not a server
    that is up. The signal's line, or None."""
    signalled = _first_signal(window, 0)
    if signalled is None or signalled >= ready:
        return None
    return signalled if _DRAINING.search(window.text, window.text_start_of(signalled)) else None


def engine_shut_down(window: LogWindow, error_lines: list[int]) -> int | None:
    """The first line of the engine core's orderly shutdown when no error with a traceback or exception line
    (``error_lines``) follows it: what the engine's other processes report afterwards is that stop."""
    for index, line in enumerate(window.lines):
        if "Shutdown " in line and _ENGINE_SHUTDOWN.search(line):
            return None if any(error > index for error in error_lines) else index
    return None


def server_shut_down(window: LogWindow, error_lines: list[int]) -> int | None:
    """The first line of the HTTP server's orderly shutdown when children report ending after it only on the
    termination or interrupt signal that shutdown sends them (vLLM's "Worker VllmWorkerProcess pid 7 died, exit code:
    -15"), and no error with a traceback or exception line (``error_lines``) follows it: those ends are the stop's,
    not kills from outside. None otherwise (a child ending on another signal, SIGKILL, stays a finding)."""
    shutdown = _SERVER_SHUTDOWN.search(window.text)
    if shutdown is None:
        return None
    index = window.line_index_at(shutdown.start())
    if any(error > index for error in error_lines):
        return None
    codes = {int(found.group(1)) for found in _CHILD_EXIT_CODE.finditer(window.text, window.text_start_of(index))}
    return index if codes and codes <= _STOP_SIGNALS else None


def engine_core_signalled_alone(window: LogWindow) -> int | None:
    """The line where vLLM's engine core reports ending on a termination signal while the API server went on taking
    requests after it and started no shutdown, and no operator's signal shows: the core alone was signalled, from
    outside (an orchestrator, a watchdog); None otherwise."""
    for index, line in enumerate(window.lines):
        if "EngineCore exiting" not in line or not _CORE_EXITING.search(line):
            continue
        after = window.lines[index + 1 :]
        if (
            any(_REQUEST_TAKEN.search(later) for later in after)
            and not any(_SERVER_SHUTDOWN.search(later) for later in after)
            and _SERVER_TRIGGER.search(window.text) is None
            and _first_signal(window, 0) is None
        ):
            return index
        return None
    return None


def operator_stop(window: LogWindow, ready: int | None) -> int | None:
    """The first line after ``ready`` (from the start when there is none) where the engine reports an operator's
    interrupt or termination signal; None without one. What the engine reports after it (children ended by the same
    signal, requests cut off, a start-up that "failed" because it was interrupted) is the stop's consequence, not a
    failure."""
    return _first_signal(window, 0 if ready is None else ready + 1)


def _first_signal(window: LogWindow, start: int) -> int | None:
    """The first line from ``start`` on that reports an operator's signal (one search over the text)."""
    if start >= len(window.lines):
        return None
    for candidate in _SIGNAL_WORDS.finditer(window.text, window.text_start_of(start)):
        index = window.line_index_at(candidate.start())
        if (
            _OPERATOR_SIGNAL.search(window.lines[index])
            and not _self_sent(window, start, index)
            and not _child_signalled_alone(window, index)
        ):
            return index
    return None


def _self_sent(window: LogWindow, start: int, index: int) -> bool:
    """The engine's own teardown sent the signal a child reports receiving at ``index`` (see ``_SELF_SENT``); an
    interrupt the process itself raises (``KeyboardInterrupt``) is the operator's."""
    if "received signal" not in window.lines[index]:
        return False
    begin, end = window.text_start_of(start), window.text_start_of(index)
    return (
        _SELF_SENT.search(window.text, begin, end) is not None
        and _SERVER_TRIGGER.search(window.text, begin, end) is None
    )


def _child_signalled_alone(window: LogWindow, index: int) -> bool:
    """A child process (the engine core, a worker) reports the signal and the server never started a shutdown: the
    child was signalled alone, from outside (an orchestrator, the OOM killer's helper), which is no stop of the
    server."""
    line = window.lines[index]
    if _WORKER_TERMINATED in line:
        found = re.finditer(_WORKER_TERMINATED, window.text)
        workers = {split_line(window.lines[window.line_index_at(match.start())]).origin for match in found}
        return len(workers) < 2
    origin = split_line(line).origin or ""
    child = "EngineCore" in origin or "Worker" in origin
    return child and "received signal" in line and _SERVER_TRIGGER.search(window.text) is None


def supervisor_exit(window: LogWindow) -> int | None:
    """The exit code the agent's process supervisor wrote as the log's last words (negative: the signal), or
    None when the log has no such line (a log of a process started some other way, or still running)."""
    for line in reversed(window.lines[-5:]):
        match = _SUPERVISOR_EXIT.search(line)
        if match is not None:
            return int(match.group("code")) if match.group("code") else -int(match.group("signal"))
    return None
