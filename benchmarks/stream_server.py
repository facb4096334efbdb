"""A fast loopback OpenAI-compatible streaming server with known timing, for the client benchmark.

Run as its own process: ``python -m benchmarks.stream_server --ttft-ms 20 --itl-ms 5`` prints
``PORT <n>`` once it listens on 127.0.0.1. ``/v1/completions`` and ``/v1/chat/completions`` stream
one token per event: the first ``ttft`` after the request arrived, then one every ``itl`` (on absolute
deadlines, so nothing drifts; with ``--itl-ms 0`` all events go out at once). A usage chunk is sent
only when the request asks for one (``stream_options.include_usage``), as SGLang and vLLM do. Every
event is prepared once at start-up, so the server spends little CPU per token and the clients are
what is measured. ``GET /stats`` returns what the server really did: per-request time from the
request's arrival to its first token event, and the gaps between token events, as medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

DISTINCT_TOKENS = 50
WRITE_BUFFER_LIMIT = 64 * 1024


def _chunk(payload: bytes) -> bytes:
    data = b"data: " + payload + b"\n\n"
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


COMPLETION_EVENTS = [
    _chunk(
        _json(
            {
                "id": "cmpl",
                "object": "text_completion",
                "model": "bench-model",
                "choices": [{"index": 0, "text": f" w{index}", "finish_reason": None}],
            }
        )
    )
    for index in range(DISTINCT_TOKENS)
]
CHAT_EVENTS = [
    _chunk(
        _json(
            {
                "id": "chat",
                "object": "chat.completion.chunk",
                "model": "bench-model",
                "choices": [{"index": 0, "delta": {"content": f" w{index}"}, "finish_reason": None}],
            }
        )
    )
    for index in range(DISTINCT_TOKENS)
]
CHAT_ROLE = _chunk(
    _json(
        {
            "id": "chat",
            "object": "chat.completion.chunk",
            "model": "bench-model",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
        }
    )
)
STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
STREAM_END = _chunk(b"[DONE]") + b"0\r\n\r\n"


class Server:
    def __init__(self, ttft_ms: float, itl_ms: float) -> None:
        self.ttft, self.itl = ttft_ms / 1000.0, itl_ms / 1000.0
        self.first_token: list[float] = []  # seconds from arrival to the first token event, per request
        self.gaps: list[float] = []  # seconds between consecutive token events
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                arrived = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length = next(
                    (int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")), 0
                )
                body = await reader.readexactly(length) if length else b""
                if not await self.route(method, path.split("?", 1)[0], body, writer, arrived):
                    return
        except ConnectionError:
            return
        finally:
            writer.close()

    async def route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter, arrived: float) -> bool:
        if method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
            return await self.stream(json.loads(body), path.endswith("chat/completions"), writer, arrived)
        if path == "/v1/models":
            return await self.plain(writer, 200, {"object": "list", "data": [{"id": "bench-model"}]})
        if path == "/stats":
            return await self.plain(writer, 200, self.stats())
        return await self.plain(writer, 404, {"detail": "Not Found"})

    async def plain(self, writer: asyncio.StreamWriter, status: int, value: object) -> bool:
        data = _json(value)
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        return True

    async def stream(
        self, request: dict[str, object], chat: bool, writer: asyncio.StreamWriter, arrived: float
    ) -> bool:
        self.requests += 1
        limit = request.get("max_tokens") or request.get("max_completion_tokens") or 16
        tokens = int(limit) if isinstance(limit, int | float | str) else 16
        events = CHAT_EVENTS if chat else COMPLETION_EVENTS
        writer.write(STREAM_HEAD + (CHAT_ROLE if chat else b""))
        last = 0.0
        for index in range(tokens):
            delay = arrived + self.ttft + index * self.itl - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.perf_counter()
            writer.write(events[index % DISTINCT_TOKENS])
            if index == 0:
                self.first_token.append(now - arrived)
            else:
                self.gaps.append(now - last)
            last = now
            if writer.transport.get_write_buffer_size() > WRITE_BUFFER_LIMIT:
                await writer.drain()
        options = request.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            prompt = request.get("prompt") if not chat else request.get("messages")
            prompt_tokens = len(prompt) if isinstance(prompt, list) and not chat else len(json.dumps(prompt).split())
            writer.write(
                _chunk(
                    _json(
                        {
                            "choices": [],
                            "usage": {
                                "prompt_tokens": prompt_tokens,
                                "completion_tokens": tokens,
                                "total_tokens": prompt_tokens + tokens,
                            },
                        }
                    )
                )
            )
        writer.write(STREAM_END)
        await writer.drain()
        return True

    def stats(self) -> dict[str, object]:
        def median_ms(values: list[float]) -> float | None:
            return round(statistics.median(values) * 1000, 4) if values else None

        return {
            "requests": self.requests,
            "configured_ttft_ms": self.ttft * 1000,
            "configured_itl_ms": self.itl * 1000,
            "ttft_ms_median": median_ms(self.first_token),
            "itl_ms_median": median_ms(self.gaps),
            "itl_samples": len(self.gaps),
        }


async def serve(ttft_ms: float, itl_ms: float) -> None:
    server = Server(ttft_ms, itl_ms)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, limit=1 << 20)
    print(f"PORT {listener.sockets[0].getsockname()[1]}", flush=True)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--itl-ms", type=float, default=0.0)
    options = parser.parse_args()
    asyncio.run(serve(options.ttft_ms, options.itl_ms))


if __name__ == "__main__":
    main()
