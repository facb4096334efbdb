"""The benchmark client against a loopback server with known timing, injected errors and spec counters."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from typing import Literal

import pytest
from support.bench import fake_server

from tools.bench.client import Endpoint, build_encoder, fetch
from tools.bench.events import EventSink, StreamOutcome
from tools.bench.load import run_level
from tools.bench.prompts import build_requests
from tools.bench.runner import BenchParams, run_sweep_blocking
from tools.bench.stats import distribution_ms, percentile, summarize
from tools.bench.wire import ResponseParser, SseSplitter


def sweep(base_url: str, **overrides: object) -> list:  # type: ignore[type-arg]
    settings: dict[str, object] = {
        "base_url": base_url,
        "model": "fake-model",
        "input_len": 32,
        "output_len": 20,
        "warmup_requests": 0,
        "request_timeout_seconds": 20.0,
    }
    settings.update(overrides)
    return run_sweep_blocking(BenchParams.model_validate(settings)).levels


ENGINES = pytest.mark.parametrize("engine", ["epoll", "asyncio"])


@ENGINES
def test_measured_latencies_reflect_the_injected_delays(engine: str) -> None:
    """Behaviour, not precision: the server cannot answer sooner than its injected delays, so each figure is at
    least that delay; the upper bounds only catch a wrong unit (a machine busy enough to stretch a stream a
    hundredfold would time the requests out first). How close the client comes to the server's own send times
    is measured in docs/benchmarks.md section 4."""
    ttft_ms, itl_ms, tokens = 60.0, 10.0, 20
    stream_ms = ttft_ms + (tokens - 1) * itl_ms
    with fake_server("--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)) as url:
        levels = sweep(url, concurrency=[1, 4], num_prompts=8, output_len=tokens, warmup_requests=1, io_engine=engine)
        truth = json.loads(asyncio.run(fetch(Endpoint.parse(url), "/timings"))[1])
    for level in levels:
        assert (level.completed, level.failed, level.errors) == (8, 0, [])
        assert level.output_tokens == 8 * tokens and level.token_counts_from == "usage"
        assert level.input_tokens == 8 * 32
        assert level.itl_ms.count == 8 * (tokens - 1) and level.tpot_ms.count == 8
        assert ttft_ms - 0.5 < level.ttft_ms.median <= level.e2e_ms.median < 100 * stream_ms, level
        assert stream_ms - 0.5 < level.e2e_ms.median, level.e2e_ms
        assert 0.0 < level.tpot_ms.median < 100 * itl_ms, level.tpot_ms
        # Gaps can shrink when a busy client reads two events at once, but they add up to the stream's length.
        assert level.itl_ms.median >= 0.0
        assert level.itl_ms.mean * (tokens - 1) <= level.e2e_ms.mean - level.ttft_ms.mean + 1e-6
    single, parallel = levels
    assert single.duration_seconds > 8 * stream_ms / 1000  # 8 streams one after another
    # The server's own record of the last level (4 at a time): streams overlapped.
    spans = [(timing["received"], timing["sent"][-1]) for timing in truth.values() if timing["sent"]]
    assert max(sum(start <= moment < end for start, end in spans) for moment, _ in spans) >= 2, spans
    assert abs(parallel.request_throughput - 8 / parallel.duration_seconds) < 1e-9
    assert abs(single.output_throughput - single.output_tokens / single.duration_seconds) < 1e-9


@pytest.mark.parametrize(("engine", "concurrency"), [("epoll", 1), ("epoll", 4), ("asyncio", 4)])
def test_client_timestamps_match_the_servers_send_times(engine: Literal["epoll", "asyncio"], concurrency: int) -> None:
    """Truth from the server itself: it stamps each text event as it leaves (CLOCK_MONOTONIC, shared by both
    processes). Whatever the load, every event is counted, none is seen before it was sent, and the request ends
    after its last event. Which read's time each event takes is checked on a controlled clock in
    test_each_event_takes_the_time_of_the_read_that_completed_it: how soon a read follows a send depends on the
    machine's load, so it is measured (docs/benchmarks.md section 4), not asserted."""
    endpoint_url, count, tokens = "", 8, 5
    with fake_server("--ttft-ms", "30", "--itl-ms", "100") as url:
        endpoint_url = url
        endpoint = Endpoint.parse(endpoint_url)
        encode = build_encoder()
        requests = build_requests(
            count=count,
            endpoint="chat",
            model="m",
            input_len=16,
            output_len=tokens,
            style="words",
            ignore_eos=True,
            temperature=0.0,
            extra_body={},
            seed=3,
            encode=encode,
            frame=lambda body: endpoint.request_bytes("POST", "/v1/chat/completions", body),
        )
        outcomes, _ = asyncio.run(
            run_level(endpoint, requests, concurrency=concurrency, request_rate=None, timeout=20, engine=engine)
        )
        truth = json.loads(asyncio.run(fetch(endpoint, "/timings"))[1])
    for index, outcome in enumerate(outcomes):
        sent = truth[f"{index}:"]["sent"]
        assert outcome.ok and outcome.first_token is not None and len(sent) == tokens
        assert len(outcome.chunk_gaps) == tokens - 1 and all(gap >= 0.0 for gap in outcome.chunk_gaps)
        seen = list(itertools.accumulate(outcome.chunk_gaps, initial=outcome.first_token))
        assert all(seen_at > sent_at - 1e-4 for seen_at, sent_at in zip(seen, sent, strict=True)), (seen, sent)
        assert outcome.finished >= seen[-1]
    summary = summarize(
        outcomes, concurrency=concurrency, request_rate=None, duration_seconds=1.0, expected_input_tokens=16
    )
    assert summary.ttft_ms.median is not None and summary.ttft_ms.median >= 30.0


def test_each_event_takes_the_time_of_the_read_that_completed_it() -> None:
    """The first token is the read that completed the first text event: not the role-only event before it, not the
    read that began it, not a later one. Events completed by one read share its time (a gap of zero)."""

    def event(delta: str) -> bytes:
        return b"data: " + json.dumps({"choices": [{"index": 0, "delta": json.loads(delta)}]}).encode() + b"\n\n"

    role, first, second, third = (
        event('{"role": "assistant"}'),
        event('{"content": "a"}'),
        event('{"content": "b"}'),
        event('{"content": "c"}'),
    )
    for decode_all in (False, True):
        outcome = StreamOutcome(text_parts=[] if decode_all else None)
        sink = EventSink(outcome)
        sink.feed(role, now=1.0)
        assert outcome.first_token is None and outcome.content_events == 0
        sink.feed(first[:10], now=2.0)  # the first text event begins but is not complete
        assert outcome.first_token is None
        sink.feed(first[10:], now=3.0)
        assert outcome.first_token == 3.0 and outcome.content_events == 1
        sink.feed(second + third, now=7.5)  # two events in one read
        sink.feed(b"data: [DONE]\n\n", now=9.0)
        assert outcome.first_token == 3.0
        assert outcome.chunk_gaps == [4.5, 0.0] and outcome.content_events == 3
        assert outcome.text_parts == (["a", "b", "c"] if decode_all else None)


def test_multi_token_events_count_tokens_from_usage() -> None:
    with fake_server("--itl-ms", "100", "--tokens-per-event", "3") as url:
        level = sweep(url, concurrency=[2], num_prompts=4, output_len=30)[0]
    assert level.output_tokens == 4 * 30
    assert level.itl_ms.count == 4 * 9  # ten events per request, nine gaps
    # Time per output token divides the 900 ms after the first event by the 29 tokens after the first, not by the
    # 9 gaps: about 31 ms, not 100 ms (the wide bounds leave room for a late first read on a busy machine).
    assert 10.0 < level.tpot_ms.median < 60.0


@ENGINES
def test_injected_errors_are_counted_with_their_messages(engine: str) -> None:
    with fake_server("--fail-every", "4", "--drop-every", "5", "--itl-ms", "1") as url:
        level = sweep(url, concurrency=[2], num_prompts=12, io_engine=engine)[0]
    assert (level.completed, level.failed) == (7, 5)  # requests 4, 8, 12 fail; 5 and 10 are cut off
    messages = {error.message: error.count for error in level.errors}
    assert sum(count for message, count in messages.items() if message.startswith("HTTP 500")) == 3
    assert any("injected failure" in message for message in messages)
    assert sum(count for message, count in messages.items() if "closed before the response" in message) == 2
    assert level.output_tokens == 7 * 20


@ENGINES
def test_error_events_inside_the_stream_fail_the_request(engine: str) -> None:
    with fake_server("--stream-error-every", "2") as url:
        level = sweep(url, concurrency=[1], num_prompts=4, io_engine=engine)[0]
    assert (level.completed, level.failed) == (2, 2)
    assert "injected stream error" in level.errors[0].message


@ENGINES
def test_server_closing_idle_keep_alive_connections_is_handled(engine: str) -> None:
    with fake_server("--close-after", "1") as url:
        level = sweep(url, concurrency=[3], num_prompts=9, io_engine=engine)[0]
    assert (level.completed, level.failed) == (9, 0)


@ENGINES
def test_unreachable_server_gives_connection_errors(engine: str) -> None:
    with fake_server() as url:
        pass  # the server is gone once the block ends
    level = sweep(url, concurrency=[2], num_prompts=2, io_engine=engine)[0]
    assert level.failed == 2 and "cannot connect" in level.errors[0].message


@ENGINES
def test_poisson_arrivals_pace_the_requests(engine: str) -> None:
    rate, count = 25.0, 10
    rng = random.Random(7)  # the level seed is params.seed + level index
    gaps = [rng.expovariate(rate) for _ in range(count - 1)]
    with fake_server() as url:
        level = sweep(
            url, concurrency=[count], num_prompts=count, request_rate=rate, seed=7, output_len=4, io_engine=engine
        )[0]
    assert level.completed == count and level.request_rate == rate
    assert level.duration_seconds >= sum(gaps)


@pytest.mark.parametrize(
    ("flavor", "source", "length", "per_run"),
    [
        ("vllm", "vllm_counters", 2.5, True),
        ("sglang", "sglang_counters", 2.5, True),
        ("sglang_gauges", "sglang_gauges", 2.5, False),
        ("sglang_info", "server_info", 3.0, False),
    ],
)
def test_speculative_acceptance_from_server_metrics(flavor: str, source: str, length: float, per_run: bool) -> None:
    with fake_server("--flavor", flavor, "--accept-length", "2.5") as url:
        level = sweep(url, concurrency=[2], num_prompts=4, output_len=10, warmup_requests=1)[0]
    assert level.spec is not None
    assert (level.spec.source, level.spec.per_run) == (source, per_run)
    assert level.spec.accept_length == pytest.approx(length)
    if source in ("vllm_counters", "sglang_counters"):
        assert level.spec.accept_rate == pytest.approx(0.5)


def test_no_speculation_metrics_means_no_acceptance_figure() -> None:
    with fake_server("--flavor", "none") as url:
        assert sweep(url, num_prompts=2)[0].spec is None


def test_parsers_give_the_same_events_however_the_bytes_are_split() -> None:
    events = [b'{"n": %d}' % index for index in range(5)]
    body = b"".join(b"data: " + event + b"\r\n\r\n" for event in events) + b": comment\n\ndata: [DONE]\n\n"
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:17], body[17:60], body[60:]))
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + b"0\r\n\r\n"
    for step in (1, 2, 3, 7, 64, len(raw)):
        splitter, seen, parser = SseSplitter(), list[bytes](), ResponseParser()
        for start in range(0, len(raw), step):
            seen.extend(splitter.feed(parser.feed(raw[start : start + step])))
        assert parser.complete and parser.status == 200 and parser.keep_alive
        assert seen == [*events, b"[DONE]"]


def test_sized_and_read_to_close_bodies() -> None:
    sized = ResponseParser()
    pieces = [
        sized.feed(b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhel"),
        sized.feed(b"lo"),
        sized.feed(b"ignored"),
    ]
    assert sized.complete and sized.status == 404 and not sized.keep_alive and pieces == [b"hel", b"lo", b""]
    unsized = ResponseParser()
    assert unsized.feed(b"HTTP/1.0 200 OK\r\n\r\nabc") == b"abc"
    assert not unsized.complete
    unsized.feed_eof()
    assert unsized.complete


def test_percentiles_match_numpy_linear_interpolation() -> None:
    values = [float(value) for value in range(1, 11)]
    assert percentile(values, 0.5) == 5.5
    assert percentile(values, 0.9) == pytest.approx(9.1)
    assert percentile(values, 0.99) == pytest.approx(9.91)
    summary = distribution_ms([0.001, 0.002, 0.003])
    assert summary.mean == pytest.approx(2.0) and summary.median == pytest.approx(2.0) and summary.count == 3
