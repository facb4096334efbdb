"""Client CPU per streamed token: opsloop's benchmark client against an aiohttp reference loop.

The reference loop is written the way sglang.bench_serving streams a chat completion: a new
``aiohttp.ClientSession`` per request, ``async for`` over the response lines, ``strip``/``decode``/
``removeprefix("data: ")``, ``json.loads`` per event, the text appended to a string. Only this
process's CPU time is counted (``time.process_time``), so the server's cost does not enter.

    python tests/support/fakes/openai_server.py --itl-ms 2 &          # prints PORT <n>
    python benchmarks/client_cpu.py --base-url http://127.0.0.1:<n> --client opsloop
    python benchmarks/client_cpu.py --base-url http://127.0.0.1:<n> --client aiohttp   # needs aiohttp
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any


def _opsloop(options: argparse.Namespace) -> tuple[int, int]:
    from tools.bench.runner import BenchParams, run_sweep

    params = BenchParams(
        base_url=options.base_url,
        model="m",
        concurrency=[options.concurrency],
        num_prompts=options.num_prompts,
        input_len=options.input_len,
        output_len=options.output_len,
        warmup_requests=0,
    )
    level = asyncio.run(run_sweep(params)).levels[0]
    return level.output_tokens, level.completed


async def _aiohttp_one(url: str, payload: dict[str, Any]) -> int:
    import aiohttp

    started, last, tokens, text = time.perf_counter(), 0.0, 0, ""
    itl: list[float] = []
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session,
        session.post(url, json=payload) as response,
    ):
        async for chunk_bytes in response.content:
            chunk_bytes = chunk_bytes.strip()
            if not chunk_bytes:
                continue
            chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
            if chunk == "[DONE]":
                continue
            data = json.loads(chunk)
            if data.get("choices") and data["choices"][0]["delta"].get("content"):
                now = time.perf_counter()
                if last:
                    itl.append(now - last)
                last = now
                text += data["choices"][0]["delta"]["content"]
            elif usage := data.get("usage"):
                tokens = usage.get("completion_tokens") or 0
    return tokens if last > started else 0


def _aiohttp(options: argparse.Namespace) -> tuple[int, int]:
    url = options.base_url.rstrip("/") + "/v1/chat/completions"

    async def run() -> list[int]:
        limit = asyncio.Semaphore(options.concurrency)

        async def bounded(index: int) -> int:
            prompt = f"{index}: " + "word " * options.input_len
            payload = {
                "model": "m",
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": options.output_len,
                "temperature": 0.0,
                "stream": True,
                "ignore_eos": True,
                "stream_options": {"include_usage": True},
            }
            async with limit:
                return await _aiohttp_one(url, payload)

        return list(await asyncio.gather(*(bounded(index) for index in range(options.num_prompts))))

    counts = asyncio.run(run())
    return sum(counts), sum(1 for count in counts if count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--client", choices=["opsloop", "aiohttp"], default="opsloop")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=512)
    options = parser.parse_args()
    if options.client == "opsloop":
        import tools.bench.runner  # noqa: F401  # imports are not part of the measurement
    else:
        import aiohttp  # noqa: F401
    cpu_before, wall_before = time.process_time(), time.perf_counter()
    tokens, completed = (_opsloop if options.client == "opsloop" else _aiohttp)(options)
    cpu, wall = time.process_time() - cpu_before, time.perf_counter() - wall_before
    print(
        json.dumps(
            {
                "client": options.client,
                "completed": completed,
                "output_tokens": tokens,
                "cpu_seconds": round(cpu, 3),
                "wall_seconds": round(wall, 3),
                "cpu_us_per_token": round(cpu / max(tokens, 1) * 1e6, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
