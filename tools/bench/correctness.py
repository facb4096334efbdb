"""A correctness probe: a few fixed prompts, greedy decoding, and sanity checks on the answers.

A configuration that is fast but produces garbage (a broken kernel, a bad quantization path, a
CUDA-graph bug at batch size 1) must be flagged, not celebrated. Each answer must be
non-empty, free of repetition loops and garbled characters, and contain the expected fact.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from tools.bench.client import Connection, Endpoint, build_encoder, stream
from tools.bench.prompts import PATHS, EndpointKind, request_body


class Probe(BaseModel):
    name: str
    prompt: str
    expect_any: list[str] = Field(default_factory=list, description="Answer must contain one of these words")
    expect_in_order: list[str] = Field(default_factory=list, description="Answer must contain these in order")


PROBES = [
    Probe(name="addition", prompt="What is 17 + 25? Reply with the number only.", expect_any=["42"]),
    Probe(name="capital", prompt="What is the capital of France? Answer in one word.", expect_any=["paris"]),
    Probe(name="multiplication", prompt="What is 12 times 12? Reply with the number only.", expect_any=["144"]),
    Probe(name="counting", prompt="Count from 1 to 5, separated by commas.", expect_in_order=["1", "2", "3", "4", "5"]),
    Probe(name="antonym", prompt="What is the opposite of hot? Answer in one word.", expect_any=["cold"]),
]


class ProbeUnanswered(Exception):
    """The server did not answer a probe in time (or could not be reached): the verdict would mean nothing."""


class ProbeResult(BaseModel):
    name: str
    passed: bool
    problems: list[str]
    answer: str


class CorrectnessVerdict(BaseModel):
    passed: bool
    passed_count: int
    total: int
    results: list[ProbeResult]
    summary: str


def _words(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text.lower())


def repetition_problem(text: str) -> str | None:
    """Describe a degenerate repetition (one token dominating, a looping n-gram at the end, a long run
    of one character), or None."""
    if re.search(r"(.)\1{24,}", text):
        return "a single character repeated 25+ times"
    words = _words(text)
    if len(words) >= 12:
        word, count = Counter(words).most_common(1)[0]
        if count / len(words) > 0.5:
            return f"the token {word!r} makes up {count} of {len(words)} tokens"
    for size in range(1, 6):
        if len(words) < size * 6:
            break
        tail = words[-size:]
        repeats = 1
        while repeats * size + size <= len(words) and words[-(repeats + 1) * size : -repeats * size] == tail:
            repeats += 1
        if repeats >= 6:
            return f"the ending loops on {' '.join(tail)!r} ({repeats} times)"
    return None


def garbled_problem(text: str) -> str | None:
    if not text:
        return None
    odd = sum(
        1 for character in text if character == "\ufffd" or (not character.isprintable() and character not in "\n\t\r")
    )
    return (
        f"{odd} of {len(text)} characters are unprintable or replacement characters" if odd / len(text) > 0.05 else None
    )


def judge(probe: Probe, text: str) -> ProbeResult:
    problems = []
    stripped = text.strip()
    if not stripped:
        problems.append("empty answer")
    for check in (repetition_problem, garbled_problem):
        problem = check(stripped)
        if problem:
            problems.append(problem)
    words = _words(stripped)
    if stripped and probe.expect_any and not any(expected in words for expected in probe.expect_any):
        problems.append(f"expected {' or '.join(repr(item) for item in probe.expect_any)} in the answer")
    if stripped and probe.expect_in_order:
        position = 0
        for expected in probe.expect_in_order:
            position = words.index(expected, position) + 1 if expected in words[position:] else -1
            if position < 0:
                problems.append(f"expected {', '.join(probe.expect_in_order)} in order")
                break
    return ProbeResult(name=probe.name, passed=not problems, problems=problems, answer=stripped[:300])


async def _ask(
    endpoint: Endpoint,
    connection: Connection,
    probe: Probe,
    *,
    kind: EndpointKind,
    model: str,
    max_tokens: int,
    extra_body: dict[str, Any],
    timeout: float,
) -> ProbeResult:
    body = request_body(
        endpoint=kind,
        model=model,
        prompt=probe.prompt,
        max_tokens=max_tokens,
        ignore_eos=False,
        temperature=0.0,
        extra_body=extra_body,
    )
    request = endpoint.request_bytes("POST", PATHS[kind], build_encoder()(body))
    outcome = await stream(connection, request, timeout=timeout, collect_text=True)
    if outcome.error is not None and outcome.error.startswith(("no complete response", "cannot connect")):
        raise ProbeUnanswered(f"probe {probe.name!r}: {outcome.error}")
    if outcome.error is not None and outcome.error != "the stream ended without any generated text":
        return ProbeResult(
            name=probe.name, passed=False, problems=[f"request failed: {outcome.error}"], answer=outcome.text[:300]
        )
    return judge(probe, outcome.text)


async def run_probes(
    base_url: str,
    model: str,
    *,
    kind: EndpointKind = "chat",
    max_tokens: int = 256,
    extra_body: dict[str, Any] | None = None,
    timeout: float = 120.0,
    request_timeout: float | None = None,
) -> CorrectnessVerdict:
    """Ask every probe; ``timeout`` bounds the whole probe and ``request_timeout`` each request. Raises
    :class:`ProbeUnanswered` at the first request the server does not answer in time (a silent server is
    not asked four more times) and when the whole probe runs out of time."""
    endpoint = Endpoint.parse(base_url)
    connection = Connection(endpoint)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    results = []
    try:
        for probe in PROBES:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise ProbeUnanswered(f"the probe did not finish within {timeout:.0f} s")
            limit = min(remaining, request_timeout or remaining)
            results.append(
                await asyncio.wait_for(
                    _ask(
                        endpoint,
                        connection,
                        probe,
                        kind=kind,
                        model=model,
                        max_tokens=max_tokens,
                        extra_body=dict(extra_body or {}),
                        timeout=limit,
                    ),
                    limit + 1.0,
                )
            )
    except TimeoutError:
        raise ProbeUnanswered(f"the probe did not finish within {timeout:.0f} s") from None
    finally:
        connection.close()
    passed = sum(result.passed for result in results)
    failures = "; ".join(f"{result.name}: {', '.join(result.problems)}" for result in results if not result.passed)
    summary = (
        f"correctness probe passed {passed}/{len(results)}"
        if passed == len(results)
        else f"correctness probe FAILED {len(results) - passed}/{len(results)} ({failures})"
    )
    return CorrectnessVerdict(
        passed=passed == len(results), passed_count=passed, total=len(results), results=results, summary=summary
    )
