"""Ready-made responders for long scripted runs (soaks, prompt-size benchmarks): an endless model that
keeps calling a tool, and a wrapper that injects faults at random with a fixed seed."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from twin.model_api.script import Fault, ModelTurn, RecordedRequest, Step, ToolUse

Responder = Callable[[RecordedRequest], Step]


def fast_faults() -> list[Fault]:
    """Every fault kind that fails quickly (no hang): HTTP errors with and without retry-after, cut and
    broken streams."""
    return [
        Fault.rate_limited(retry_after=0.001),
        Fault.rate_limited(),
        Fault.rate_limited(retry_after_ms=1),
        Fault.http(500),
        Fault.http(502),
        Fault.http(503),
        Fault.overloaded(),
        Fault.cut_stream(after_events=2),
        Fault.cut_stream(after_events=4, clean=True),
        Fault.stream_error(after_events=2),
    ]


def with_random_faults(
    responder: Responder, rate: float, seed: int = 0, faults: Sequence[Fault] | None = None
) -> Responder:
    """``responder`` with a fault instead of its answer on about ``rate`` of the requests. The wrapped
    responder is only asked when no fault is injected, so its own count of turns stays exact."""
    chooser = random.Random(seed)
    choices = list(faults) if faults is not None else fast_faults()

    def respond(request: RecordedRequest) -> Step:
        if chooser.random() < rate:
            return chooser.choice(choices)
        return responder(request)

    return respond


def reading_loop(steps: int, output_chars: int = 2_700, tool: str = "emit") -> Responder:
    """A model that calls ``tool`` (``{"text", "repeat"}`` arguments) once per turn, records a finding
    every tenth turn with ``update_state``, and calls ``finish`` after ``steps`` turns."""
    turns = 0

    def respond(request: RecordedRequest) -> Step:
        nonlocal turns
        turn, turns = turns, turns + 1
        if turn >= steps:
            return ModelTurn(tool_calls=[ToolUse("finish", {"summary": f"finished after {turn} steps"})])
        line = f"step {turn} log line; "
        calls = [ToolUse(tool, {"text": line, "repeat": max(1, output_chars // len(line))})]
        if turn % 10 == 0:
            calls.append(
                ToolUse("update_state", {"findings": [{"summary": f"checkpoint {turn}", "evidence": [f"step {turn}"]}]})
            )
        return ModelTurn(text=f"Step {turn}: reading the log again.", tool_calls=calls)

    return respond
