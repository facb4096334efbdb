"""A loopback OpenAI-compatible streaming server with known timing, for benchmark and probe tests.

Run as its own process: ``python openai_server.py --ttft-ms 40 --itl-ms 8`` prints ``PORT <n>`` once it
listens on 127.0.0.1. Every streamed completion waits exactly the configured time to first token,
then sends one SSE event per ``--tokens-per-event`` tokens at a fixed period (scheduled on absolute
deadlines so there is no drift), and ends with a usage chunk and ``[DONE]``. Errors can be injected
(HTTP 500, an error event mid-stream, a dropped connection), and the speculative-decoding counters
of vLLM or SGLang are served on /metrics with a known acceptance length.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

ANSWERS = {  # what a healthy model says to the probe prompts (a stand-in for the model, not for the tool)
    "17 + 25": "17 + 25 = 42.",
    "capital of France": "The capital of France is Paris.",
    "12 times 12": "12 times 12 is 144.",
    "from 1 to 5": "1, 2, 3, 4, 5",
    "opposite of hot": "The opposite of hot is cold.",
}


class Server:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.requests = 0
        # Per request (keyed by the prompt's first word): when it arrived and when each text event left,
        # on CLOCK_MONOTONIC (time.perf_counter), which every process on the machine shares.
        self.timings: dict[str, dict[str, object]] = {}
        self.tokens = 0.0
        self.prompt_tokens = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {
                    name.lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                keep = await self.route(method, path, body, writer)
                served += 1
                if not keep or (self.options.close_after and served >= self.options.close_after):
                    return
        finally:
            writer.close()

    async def route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        if method == "POST" and path in ("/v1/chat/completions", "/v1/completions"):
            return await self.complete(json.loads(body), path.endswith("chat/completions"), writer)
        if path == "/metrics" and self.options.flavor in ("vllm", "sglang", "sglang_gauges"):
            return await self.plain(writer, 200, self.metrics_text(), "text/plain; version=0.0.4")
        if path == "/server_info" and self.options.flavor.startswith("sglang"):
            length = self.options.accept_length + 0.5  # cumulative since start: deliberately different
            info = {"version": "0.5.8", "internal_states": [{"avg_spec_accept_length": length}]}
            return await self.plain(writer, 200, json.dumps(info), "application/json")
        if path == "/timings":
            return await self.plain(writer, 200, json.dumps(self.timings), "application/json")
        if path == "/v1/models":
            models = {"data": [{"id": "fake-model"}]}
            return await self.plain(writer, 200, json.dumps(models), "application/json")
        return await self.plain(writer, 404, json.dumps({"detail": "Not Found"}), "application/json")

    async def plain(self, writer: asyncio.StreamWriter, status: int, text: str, content_type: str) -> bool:
        data = text.encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        return True

    def metrics_text(self) -> str:
        accept, drafts = self.options.accept_length, self.tokens / self.options.accept_length
        if self.options.flavor == "vllm":
            return (
                "# TYPE vllm:spec_decode_num_drafts_total counter\n"
                f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}\n'
                f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {drafts * 3}\n'
                f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} '
                f"{self.tokens - drafts}\n"
            )
        gauges = (
            f'sglang:spec_accept_length{{tp_rank="0"}} {accept}\n'
            f'sglang:spec_accept_rate{{tp_rank="0"}} {(accept - 1) / 3}\n'
        )
        if self.options.flavor == "sglang_gauges":
            return gauges
        return (
            gauges + f'sglang:generation_tokens_total{{model_name="m"}} {self.tokens}\n'
            f'sglang:spec_verify_calls_total{{tp_rank="0"}} {drafts}\n'
            f'sglang:spec_verify_calls_total{{tp_rank="1"}} {drafts}\n'
            f'sglang:spec_num_draft_tokens{{tp_rank="0"}} 4\n'
        )

    async def complete(self, request: dict[str, object], chat: bool, writer: asyncio.StreamWriter) -> bool:
        options = self.options
        self.requests += 1
        number = self.requests
        if options.fail_every and number % options.fail_every == 0:
            message = json.dumps({"object": "error", "message": "injected failure", "code": 500})
            await self.plain(writer, 500, message, "application/json")
            return True
        started = time.perf_counter()
        prompt = request.get("prompt") if not chat else request["messages"][-1]["content"]  # type: ignore[index]
        prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        texts = self.texts(str(prompt), int(request.get("max_tokens") or 16))  # type: ignore[call-overload]
        if not request.get("stream"):
            self.tokens += len(texts) * options.tokens_per_event
            text = "".join(texts)
            choice = {"index": 0, "message": {"role": "assistant", "content": text}} if chat else {"text": text}
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(texts) * options.tokens_per_event}
            return await self.plain(writer, 200, json.dumps({"choices": [choice], "usage": usage}), "application/json")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        if chat:
            role = {"index": 0, "delta": {"role": "assistant", "content": ""}}
            await self.event(writer, {"choices": [role]})
        sent: list[float] = []
        self.timings[str(prompt).split(" ", 1)[0]] = {"received": started, "sent": sent}
        for index, text in enumerate(texts):
            deadline = started + (options.ttft_ms + index * options.itl_ms) / 1000.0
            await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
            if options.drop_every and number % options.drop_every == 0 and index == 2:
                writer.transport.abort()
                return False
            if options.stream_error_every and number % options.stream_error_every == 0 and index == 2:
                await self.event(writer, {"error": {"message": "injected stream error", "code": 500}})
                break
            choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            sent.append(time.perf_counter())  # stamped just before the bytes are handed to the kernel
            await self.event(writer, {"choices": [choice]})
        completion_tokens = len(texts) * options.tokens_per_event
        self.tokens += completion_tokens
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
        await self.event(writer, {"choices": [], "usage": usage})
        done = b"data: [DONE]\n\n"
        writer.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
        await writer.drain()
        return True

    def texts(self, prompt: str, max_tokens: int) -> list[str]:
        events = max(1, max_tokens // self.options.tokens_per_event)
        mode = self.options.mode
        if mode == "garbled":
            return [" the"] * events
        if mode == "empty":
            return []
        answer = next((text for key, text in ANSWERS.items() if key in prompt), None)
        if answer is not None and mode == "model":
            return [word + " " for word in answer.split(" ")]
        if answer is not None and mode == "wrong":
            return ["I ", "am ", "not ", "sure."]
        return [f" w{index % 50}" for index in range(events)]

    async def event(self, writer: asyncio.StreamWriter, payload: dict[str, object]) -> None:
        data = b"data: " + json.dumps(payload).encode() + b"\n\n"
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--itl-ms", type=float, default=0.0)
    parser.add_argument("--tokens-per-event", type=int, default=1)
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--stream-error-every", type=int, default=0)
    parser.add_argument("--drop-every", type=int, default=0)
    parser.add_argument("--close-after", type=int, default=0)
    parser.add_argument("--flavor", default="none", choices=["none", "vllm", "sglang", "sglang_gauges", "sglang_info"])
    parser.add_argument("--accept-length", type=float, default=2.5)
    parser.add_argument("--mode", default="model", choices=["model", "garbled", "empty", "wrong"])
    options = parser.parse_args()
    server = Server(options)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    print(f"PORT {listener.sockets[0].getsockname()[1]}", flush=True)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
