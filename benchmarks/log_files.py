"""Large synthetic engine logs for the log benchmarks: an SGLang start-up, hours of serving, a crash.

The serving part is a block of decode, prefill and access lines (counters vary from line to line)
written over and over until the file has the requested size; the file ends with an out-of-memory
traceback, so the diagnosis has something to find and ``tail`` returns the crash.
"""

from __future__ import annotations

import random
from pathlib import Path

BLOCK_BYTES = 4 * 1024 * 1024

HEAD = """\
[2026-11-30 08:00:01] server_args=ServerArgs(model_path='/models/Kimi-K2.5-INT4', tp_size=8, mem_fraction_static=0.88, \
attention_backend='triton', speculative_algorithm='EAGLE3', port=30000)
[2026-11-30 08:00:09 TP0] Init torch distributed begin.
[2026-11-30 08:00:12 TP0] Init torch distributed ends. mem usage=0.31 GB
[2026-11-30 08:00:13 TP0] Load weight begin. avail mem=93.52 GB
Loading safetensors checkpoint shards: 100% Completed | 64/64 [04:11<00:00,  3.93s/it]
[2026-11-30 08:04:30 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=22.14 GB
[2026-11-30 08:04:41 TP0] KV Cache is allocated. #tokens: 912384, K size: 5.21 GB, V size: 5.21 GB
[2026-11-30 08:05:20 TP0] Capture cuda graph end. Time elapsed: 38.12 s. mem usage=1.94 GB. avail mem=9.85 GB.
[2026-11-30 08:05:31] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)
[2026-11-30 08:05:33] The server is fired up and ready to roll!
"""

TAIL = """\
[2026-11-30 13:59:58 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2719, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/opt/sglang/python/sglang/srt/model_executor/model_runner.py", line 1898, in forward_extend
    return self.model.forward(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 94.97 GiB \
of which 1.12 GiB is free.
[2026-11-30 13:59:58] Received sigquit from a child process. It usually means the child failed.
"""


def _serving_block(rng: random.Random, size: int) -> bytes:
    lines: list[str] = []
    total = 0
    second = 0
    while total < size:
        second += 1
        stamp = f"2026-11-30 {8 + second // 3600 % 6:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        running = rng.randrange(1, 64)
        choice = rng.random()
        if choice < 0.6:
            line = (
                f"[{stamp} TP0] Decode batch. #running-req: {running}, #token: {rng.randrange(1000, 900000)}, "
                f"token usage: {rng.random():.2f}, accept len: {1.5 + rng.random() * 2:.2f}, cuda graph: True, "
                f"gen throughput (token/s): {rng.uniform(200, 1500):.2f}, #queue-req: {rng.randrange(0, 8)}"
            )
        elif choice < 0.8:
            line = (
                f"[{stamp} TP0] Prefill batch. #new-seq: {rng.randrange(1, 4)}, #new-token: "
                f"{rng.randrange(16, 8192)}, #cached-token: {rng.randrange(0, 4096)}, token usage: "
                f"{rng.random():.2f}, #running-req: {running}, #queue-req: {rng.randrange(0, 8)}"
            )
        elif choice < 0.995:
            line = (
                f"[{stamp}] INFO:     127.0.0.1:{rng.randrange(30000, 60000)} - "
                f'"POST /v1/chat/completions HTTP/1.1" 200 OK'
            )
        else:
            line = f"[{stamp} TP0] WARNING: request {rng.randrange(10**6)} aborted by the client"
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def write_log(path: Path, size_bytes: int, seed: int = 0) -> int:
    """Write a log of about ``size_bytes`` (at least the head and the tail); returns its real size."""
    rng = random.Random(seed)
    head, tail = HEAD.encode(), TAIL.encode()
    block = _serving_block(rng, min(BLOCK_BYTES, max(size_bytes, 1)))
    remaining = size_bytes - len(head) - len(tail)
    with open(path, "wb") as handle:
        handle.write(head)
        while remaining > 0:
            piece = block if remaining >= len(block) else block[: block.rfind(b"\n", 0, remaining) + 1]
            if not piece:
                break
            handle.write(piece)
            remaining -= len(piece)
        handle.write(tail)
    return path.stat().st_size
