"""Errors of single requests while the engine serves: the request fails, the engine goes on.

An engine that answered requests had been ready, even when the excerpt starts after its ready line. Once it
serves, an exception raised and logged in the API layer (the OpenAI-compatible server's request handling, tool
and reasoning parsers, chat templates) fails that request alone: the server answers it with an error status and
keeps serving. Such events are not the engine's failure. An error saying the engine itself is dead, or one in
any other component, still is.

The API server runs in a process of its own and goes on answering probes (``GET /metrics``, ``/health``) and
logging its periodic statistics when the engine behind it has died or stopped making progress: after vLLM's report
of a dead engine or worker process, no later line is an answer of the engine's; after its no-progress notice
(the workers did not take the next broadcast), probes and statistics are not either, only requests answered.
"""

from __future__ import annotations

import re

from tools.logs.components import failing_component
from tools.logs.events import ErrorEvent, LogEvents
from tools.logs.library import SignatureLibrary
from tools.logs.phase import last_phase
from tools.logs.signals import SELF_REPORT
from tools.logs.window import LogWindow

_ENGINE_GONE = re.compile(r"Dead|[Ee]ngine ?[Cc]ore|died|shut ?down|[Cc]onnection (?:closed|reset)")
# The HTTP server starting (its configuration, TLS context, start-up hooks), not a request being handled.
_SERVER_STARTING = re.compile(r"serve_http|run_server\w*|build_and_serve|create_ssl_context|startup")


# Signatures that say the engine behind the API server is dead, or stopped taking work.
_ENGINE_DEAD = "engine-core-died"
NO_PROGRESS_SIGNATURE = "vllm-shm-broadcast-stall"


def answered_before_errors(window: LogWindow, library: SignatureLibrary, events: LogEvents) -> int | None:
    """The line of an answered request (or another serving milestone) before the first error (an exception, or
    a failure that only a serving engine reports), or None."""
    errors = [event.first_index for event in events.real() if event.kind != "stack_dump"]
    serving_failure = _first_line(
        window, [regex for item in library.signatures if item.while_serving for regex in item.regexes]
    )
    first_error = min(errors + ([] if serving_failure is None else [serving_failure]), default=None)
    gone = engine_gone(window, library)
    if gone is not None:
        first_error = gone if first_error is None else min(first_error, gone)
    seen = last_phase(window, library, before=first_error)
    return seen.index if seen.phase == "serving" else None


def engine_gone(window: LogWindow, library: SignatureLibrary) -> int | None:
    """The first line saying the engine died, or stopped making progress with nothing but the API server's own
    reports after it; None when there is none."""
    regexes = {signature.id: signature.regexes for signature in library.signatures}
    dead = _first_line(window, regexes.get(_ENGINE_DEAD, []))
    stalled = _first_line(window, regexes.get(NO_PROGRESS_SIGNATURE, []))
    if stalled is not None:
        later = last_phase(window, library)
        if later.index is not None and later.index > stalled and not SELF_REPORT.search(window.lines[later.index]):
            stalled = None
    found = [index for index in (dead, stalled) if index is not None]
    return min(found) if found else None


def _first_line(window: LogWindow, regexes: list[re.Pattern[str]]) -> int | None:
    matches = [match.start() for regex in regexes if (match := regex.search(window.text))]
    return window.line_index_at(min(matches)) if matches else None


def request_errors(events: LogEvents, ready: int) -> list[ErrorEvent]:
    """The events after ``ready`` that failed a single request in the API layer (with the exceptions that caused
    them, when the log chains them)."""
    return [event for event in _request_failures(events) if event.first_index > ready]


def serving_despite_request_errors(
    window: LogWindow, library: SignatureLibrary, events: LogEvents
) -> tuple[int, list[ErrorEvent]] | None:
    """For a log (often an excerpt that starts while the engine serves) whose every error failed a single request
    in the API layer and which answers requests after them: the line of the last answer and those errors."""
    real = [event for event in events.real() if event.kind != "stack_dump"]
    failed = _request_failures(events)
    if not real or len(failed) != len(real):
        return None
    seen = last_phase(window, library)
    if seen.phase != "serving" or seen.index is None or seen.index <= max(event.index for event in real):
        return None
    return seen.index, failed


def _request_failures(events: LogEvents) -> list[ErrorEvent]:
    """The real events that failed a single request in the API layer, and the exceptions chained into them."""
    real = events.real()
    failed = [
        bool(event.frames)
        and failing_component(event.frames) == "http_server"
        and not _ENGINE_GONE.search(f"{event.type} {event.message}")
        and not any(_SERVER_STARTING.fullmatch(frame.function) for frame in event.frames)
        for event in real
    ]
    for position in range(len(real) - 2, -1, -1):
        following = real[position + 1]
        failed[position] = failed[position] or (following.chained and failed[position + 1])
    return [event for event, request in zip(real, failed, strict=True) if request]


def without(events: LogEvents, dropped: list[ErrorEvent]) -> LogEvents:
    """The events less ``dropped`` (the log still ends in a traceback only when a kept event ends it)."""
    if not dropped:
        return events
    kept = [event for event in events.events if all(event is not other for other in dropped)]
    ends = events.ends_in_traceback and bool(kept) and kept[-1] is events.events[-1]
    return LogEvents(kept, events.source_lines, ends)
