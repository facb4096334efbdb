"""The serving engine stand-in over real HTTP: OpenAI streaming and pacing, answers, metrics, speculation."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.sim import EngineProcess, free_port, http_get, http_post, wait_healthy, write_scenario

from twin.engine.scheduler import aggregate_rate
from twin.layout import SimLayout, materialize
from twin.loader import load_scenario
from twin.quality import per_position_from_length, write_quality

GARBLED = """
[[modifiers]]
name = "broken INT4 path"
output = "garbled"
[modifiers.when.env]
BROKEN = "1"
"""


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[int, EngineProcess]]:
    scenario = write_scenario(tmp_path, rules=GARBLED)
    port = free_port()
    engine = EngineProcess(
        scenario,
        tmp_path / "sim",
        ["--model-path", "test-org/Test-30B", "--tp", "2", "--port", str(port), "--enable-metrics"],
    )
    try:
        wait_healthy(port, engine.process, log=engine.log_path)
        yield port, engine
    finally:
        engine.stop()


def _stream(port: int, body: dict[str, object]) -> tuple[list[float], list[dict[str, Any]]]:
    """Arrival times (seconds from the request) of each data chunk, and the decoded chunks."""
    started = time.perf_counter()
    times: list[float] = []
    chunks: list[dict[str, Any]] = []
    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                chunks.append({"done": True})
                continue
            times.append(time.perf_counter() - started)
            chunks.append(json.loads(line[6:]))
    return times, chunks


def test_streaming_chat_is_paced_like_the_scenario(serving: tuple[int, EngineProcess]) -> None:
    port, _ = serving
    body = {
        "model": "test-org/Test-30B",
        "messages": [{"role": "user", "content": "Tell me about caches"}],
        "stream": True,
        "max_tokens": 40,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    times, chunks = _stream(port, body)
    assert chunks[-1] == {"done": True}
    usage = chunks[-2]["usage"]
    assert usage == {
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": 40,
        "total_tokens": usage["prompt_tokens"] + 40,
    }
    content = [chunk["choices"][0]["delta"].get("content") for chunk in chunks[:-2]]
    assert len(content) == 41 and content[-1] is None  # 40 tokens, then the finish chunk
    # The engine cannot send early, so the lower bounds hold under any load; a busy client reads late and in
    # bursts, so the upper bound only catches a wrong unit.
    assert times[0] >= 0.04  # scenario: first token after 50 ms
    assert times[39] >= 0.05 + 39 * 0.01 * 0.9  # paced at 100 tok/s, not sent at once
    assert times[39] < 30
    assert chunks[-3]["choices"][0]["finish_reason"] == "length"


def test_greedy_answers_are_right_and_sensible(serving: tuple[int, EngineProcess]) -> None:
    port, _ = serving
    status, body = http_post(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        {"model": "any", "temperature": 0, "messages": [{"role": "user", "content": "What is 17 + 25?"}]},
    )
    assert status == 200
    assert "42" in body["choices"][0]["message"]["content"] and body["choices"][0]["finish_reason"] == "stop"
    status, body = http_post(
        f"http://127.0.0.1:{port}/v1/completions",
        {"model": "any", "prompt": "The capital of France is", "max_tokens": 30, "temperature": 0},
    )
    assert status == 200 and "Paris" in body["choices"][0]["text"]
    assert body["usage"]["completion_tokens"] <= 30


def test_information_endpoints_and_metric_names(serving: tuple[int, EngineProcess]) -> None:
    port, engine = serving
    base = f"http://127.0.0.1:{port}"
    assert http_post(f"{base}/v1/completions", {"prompt": "hello", "max_tokens": 5})[0] == 200
    status, models = http_get(f"{base}/v1/models")
    assert status == 200 and json.loads(models)["data"][0]["id"] == "test-org/Test-30B"
    status, info = http_get(f"{base}/server_info")
    state = json.loads(info)["internal_states"][0]
    assert state["memory_usage"]["token_capacity"] > 0 and "avg_spec_accept_length" not in state
    status, metrics = http_get(f"{base}/metrics")
    for name in (
        "sglang:num_running_reqs",
        "sglang:gen_throughput",
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:time_to_first_token_seconds_bucket",
        "sglang:token_usage",
    ):
        assert f"\n{name}{{" in metrics, name
    assert http_get(f"{base}/no/such/path")[0] == 404
    assert 'POST /v1/completions HTTP/1.1" 200 OK' in engine.log()
    assert "Prefill batch, #new-seq: 1" in engine.log()


def test_throughput_grows_with_concurrency_up_to_the_peak(serving: tuple[int, EngineProcess]) -> None:
    port, engine = serving

    async def run(concurrency: int) -> float:
        async with httpx.AsyncClient(timeout=30) as client:

            async def one(index: int) -> int:
                response = await client.post(
                    f"http://127.0.0.1:{port}/v1/completions",
                    json={"prompt": f"item {index}", "max_tokens": 30, "ignore_eos": True},
                )
                return int(response.json()["usage"]["completion_tokens"])

            started = time.perf_counter()
            tokens = sum(await asyncio.gather(*(one(index) for index in range(concurrency))))
            return tokens / (time.perf_counter() - started)

    single, eight = asyncio.run(run(1)), asyncio.run(run(8))
    # A stalled machine only lowers a wall-clock rate, so the bounds above the scenario's rates are firm; the low
    # ones only catch a wrong unit. That the eight requests were batched is read from the engine's own log.
    assert 10 <= single <= 110  # 100 tok/s, less the 50 ms first-token time
    assert 10 <= eight <= 440  # scenario peak 400 tok/s
    running = [int(match) for match in re.findall(r"Prefill batch, .*#running-req: (\d+)", engine.log_path.read_text())]
    assert max(running) >= 2, running


def test_the_aggregate_rate_grows_with_the_batch_and_saturates_at_the_peak() -> None:
    rates = [aggregate_rate(running, single=100.0, peak=400.0) for running in (1, 2, 4, 8, 64)]
    assert rates == sorted(rates)
    assert 94 < rates[0] <= 100 and 370 < rates[3] < 400 and 399 < rates[4] <= 400


def test_a_garbling_modifier_makes_repeated_tokens(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, rules=GARBLED)
    port = free_port()
    engine = EngineProcess(
        scenario,
        tmp_path / "sim",
        ["--model-path", "test-org/Test-30B", "--tp", "2", "--port", str(port)],
        env={"BROKEN": "1"},
    )
    try:
        wait_healthy(port, engine.process, log=engine.log_path)
        _, body = http_post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            {"temperature": 0, "max_tokens": 30, "messages": [{"role": "user", "content": "What is 17 + 25?"}]},
        )
        words = body["choices"][0]["message"]["content"].split()
        assert "42" not in words and words.count("the") > 20
        assert http_get(f"http://127.0.0.1:{port}/metrics")[0] == 404  # SGLang needs --enable-metrics
    finally:
        engine.stop()


def _trained_drafter(tmp_path: Path, scenario_path: Path, accept_length: float) -> Path:
    scenario, _ = load_scenario(str(scenario_path))
    layout = SimLayout(tmp_path / "sim")
    materialize(layout, scenario)
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"]}))
    write_quality(drafter, per_position_from_length(accept_length))
    return drafter


def test_sglang_speculation_reports_acceptance_from_the_drafter(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path)
    drafter = _trained_drafter(tmp_path, scenario, 3.0)
    port = free_port()
    flags = [
        "--model-path",
        "test-org/Test-30B",
        "--tp",
        "2",
        "--port",
        str(port),
        "--enable-metrics",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        str(drafter),
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "4",
    ]
    engine = EngineProcess(scenario, tmp_path / "sim", flags)
    try:
        wait_healthy(port, engine.process, log=engine.log_path)
        status, body = http_post(
            f"http://127.0.0.1:{port}/generate",
            {"text": "Write about schedulers", "sampling_params": {"max_new_tokens": 200, "ignore_eos": True}},
        )
        meta = body["meta_info"]
        assert status == 200 and meta["completion_tokens"] == 200
        assert 2.6 <= meta["spec_accept_length"] <= 3.4 and meta["spec_verify_ct"] < 100
        state = json.loads(http_get(f"http://127.0.0.1:{port}/server_info")[1])["internal_states"][0]
        assert 2.6 <= state["avg_spec_accept_length"] <= 3.4
        assert state["effective_max_running_requests_per_dp"] == 48
        assert "Max running requests is reset to 48 for speculative decoding" in engine.log()
    finally:
        engine.stop()


def test_vllm_spec_decode_counters(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path)
    port = free_port()
    spec = json.dumps({"method": "eagle3", "model": "test-org/generic-eagle3", "num_speculative_tokens": 3})
    engine = EngineProcess(
        scenario,
        tmp_path / "sim",
        ["test-org/Test-30B", "-tp", "2", "--port", str(port), "--speculative-config", spec],
        engine="vllm",
    )
    try:
        wait_healthy(port, engine.process, log=engine.log_path)
        http_post(f"http://127.0.0.1:{port}/v1/completions", {"prompt": "x", "max_tokens": 160, "ignore_eos": True})
        metrics = http_get(f"http://127.0.0.1:{port}/metrics")[1]
        values = {
            line.split("{")[0]: float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("vllm:") and "{" in line and "position=" not in line
        }
        drafts = values["vllm:spec_decode_num_drafts_total"]
        accepted = values["vllm:spec_decode_num_accepted_tokens_total"]
        assert values["vllm:spec_decode_num_draft_tokens_total"] == 3 * drafts
        assert 1.3 <= 1 + accepted / drafts <= 1.6  # the generic drafter: about 15% of draft tokens accepted
        assert values["vllm:generation_tokens_total"] == 160
    finally:
        engine.stop()
