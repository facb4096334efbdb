"""A stand-in inference engine for launch/readiness tests: prints engine-like log lines and serves HTTP.

Accepts SGLang/vLLM flags (--host, --port and the model's name matter: /v1/models lists
--served-model-name, else --model-path or --model, as the engines do). FAKE_ENGINE_MODE selects the behaviour:
ready (SGLang wording), vllm-no-ready-line, slow-quiet (silent CPU-busy load), hang (stops after
NCCL init), spin-after-nccl (CPU-busy after NCCL init, no output), oom (dies with a CUDA OOM),
endless-loading (keeps printing progress forever).
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import sys
import threading
import time

MODE = os.environ.get("FAKE_ENGINE_MODE", "ready")
QUIET_SECONDS = float(os.environ.get("FAKE_QUIET_SECONDS", "2.5"))
state: dict[str, object] = {"warm": False, "model": "fake"}


def say(line: str) -> None:
    print(line, flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path in ("/health", "/v1/models"):
            code = 200 if state["warm"] else 503
            listing = {"object": "list", "data": [{"id": state["model"], "object": "model"}]}
            body = json.dumps(listing).encode() if self.path == "/v1/models" else b""
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(host: str, port: int) -> None:
    server = http.server.ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(10_000))


def load_sglang() -> None:
    say("[2026-03-02 10:11:09 TP0] Init torch distributed begin.")
    say(
        "[2026-03-02 10:11:12 TP0] Custom allreduce is disabled because it's not supported on more than two "
        "PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly."
    )
    say("[2026-03-02 10:11:15 TP0] Load weight begin. avail mem=93.85 GB")
    for done in (16, 32, 64):
        percent = done * 100 // 64
        sys.stdout.write(
            f"\rLoading safetensors checkpoint shards: {percent:3d}% Completed | {done}/64 [00:01<00:01,  5.95it/s]"
        )
        sys.stdout.flush()
        time.sleep(0.05)
    say("")
    say("[2026-03-02 10:17:44 TP0] KV Cache is allocated. #tokens: 412032, KV size: 13.48 GB")
    say("[2026-03-02 10:17:45 TP0] Capture cuda graph begin. This can take up to several minutes.")
    say("[2026-03-02 10:18:31 TP0] Capture cuda graph end. Time elapsed: 46.12 s. mem usage=1.83 GB.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--model-path", "--model", dest="model", default="fake")
    parser.add_argument("--served-model-name", default=None)
    options, _ = parser.parse_known_args()
    state["model"] = options.served_model_name or options.model
    say("[2026-03-02 10:11:02] server_args=ServerArgs(model_path='/models/fake', fake=True)")
    if MODE == "hang":
        say("[2026-03-02 10:11:09 TP0] Init torch distributed begin.")
        say("host:5120:5212 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer")
        time.sleep(3600)
    if MODE == "spin-after-nccl":
        say("[2026-03-02 10:11:09 TP0] Init torch distributed begin.")
        busy(3600)
    if MODE == "oom":
        load_sglang()
        say("[2026-03-02 10:18:33 TP0] Scheduler hit an exception: Traceback (most recent call last):")
        say(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
            "capacity of 95.00 GiB of which 1.10 GiB is free."
        )
        say("[2026-03-02 10:18:33] Received sigquit from a child process. It usually means the child failed.")
        sys.exit(1)
    if MODE == "endless-loading":
        say("[2026-03-02 10:11:15 TP0] Load weight begin. avail mem=93.85 GB")
        done = 0
        while True:
            done = min(done + 1, 63)
            percent = done * 100 // 64
            say(f"Loading safetensors checkpoint shards: {percent:3d}% Completed | {done}/64 [00:01<01:00]")
            time.sleep(0.2)
    if MODE == "slow-quiet":
        say("[2026-03-02 10:11:15 TP0] Load weight begin. avail mem=93.85 GB")
        busy(QUIET_SECONDS)  # a long silent stretch that is still working
    if MODE == "vllm-no-ready-line":
        say("(APIServer pid=1) INFO 05-28 14:30:04 [api_server.py:1805] vLLM API server version 0.33.0")
        serve(options.host, options.port)
        time.sleep(0.3)
        state["warm"] = True
        time.sleep(3600)
    load_sglang()
    serve(options.host, options.port)
    say(f"[2026-03-02 10:18:34] INFO:     Uvicorn running on http://{options.host}:{options.port}")
    time.sleep(0.2)  # warmup: /health answers 503 until it is done
    say("[2026-03-02 10:18:39] The server is fired up and ready to roll!")
    time.sleep(0.1)  # /health turns 200 just after the line, so tests see both deterministically
    state["warm"] = True
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
