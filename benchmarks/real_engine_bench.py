"""``agent bench`` against vLLM's own client, ``vllm bench serve``, on one real vLLM (CPU build) in one run.

The server is the tiny test model on the engine environment of ``scripts/ci-real-engine-setup`` (made on first
use: a few minutes), compiled as a deployment would run it, ``VLLM_CPU_KVCACHE_SPACE=1``, max model length
1024. Each client runs as its own process against it, one after the other, in ``rounds`` rounds whose order
alternates (opsloop first, then vLLM first, ...) so that drift of a shared machine falls on both:

- ``long``: ``requests`` requests of ``input-len`` prompt tokens and ``output-len`` output tokens at
  ``concurrency``; TTFT, ITL and output throughput of the two clients are compared on these runs;
- ``short``: the same with 8 output tokens. Client CPU per streamed token = (CPU(long) - CPU(short)) /
  (requests x (output-len - 8)): start-up and per-request costs cancel out.

Each figure reported is the median over the rounds; every run is in the output too.

vLLM's client is ``vllm.benchmarks.serve`` run through its module (the ``vllm`` console script of vllm-cpu
fails: docs/real-engine.md), ``--backend openai --dataset-name random --ignore-eos``; opsloop's is
``agent bench --endpoint completions --no-correctness``. Client CPU is user + system time of the client
process (``RUSAGE_CHILDREN`` around it; the server was started in another session and is not waited for).

    python -m benchmarks.real_engine_bench [--rounds 3 --requests 48 --concurrency 4 --input-len 128 --output-len 256]
    python -m benchmarks.real_engine_bench --base-url http://127.0.0.1:8000   # a server already running
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.clients import Load, _measured
from benchmarks.common import REPO_ROOT, child_environment, emit, machine, note

VLLM_CLIENT = (
    "import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "from vllm.benchmarks.serve import add_cli_args, main; parser = FlexibleArgumentParser(); "
    "add_cli_args(parser); main(parser.parse_args(sys.argv[1:]))"
)
ENGINE_ENVIRONMENT = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
SHORT_OUTPUT = 8


@dataclass
class ClientRun:
    """What one client measured in one run, and what the run cost the client."""

    client: str
    load: Load
    cpu_seconds: float
    wall_seconds: float
    completed: int
    output_throughput: float
    ttft_median_ms: float | None
    itl_median_ms: float | None
    itl_mean_ms: float | None
    tpot_median_ms: float | None

    def summary(self) -> dict[str, Any]:
        return {key: round(value, 3) if isinstance(value, float) else value for key, value in vars(self).items()} | {
            "load": vars(self.load)
        }


def prepare() -> dict[str, str]:
    completed = subprocess.run(
        [str(REPO_ROOT / "scripts" / "ci-real-engine-setup")], capture_output=True, text=True, check=True
    )
    return dict(line.split("=", 1) for line in completed.stdout.splitlines() if "=" in line)


def start_server(python: str, model: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--max-model-len", "1024"]
    with log.open("wb") as output:
        server = subprocess.Popen(
            argv,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, **ENGINE_ENVIRONMENT},
            start_new_session=True,
            cwd=log.parent,
        )
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            time.sleep(1)
    os.killpg(server.pid, signal.SIGKILL)
    raise SystemExit(f"vLLM did not become ready; see {log}")


def run_opsloop(base_url: str, model: str, load: Load) -> ClientRun:
    argv = [sys.executable, "-m", "agent", "bench", "--base-url", base_url, "--model", model]
    argv += ["--endpoint", "completions", "--concurrency", str(load.concurrency), "--num-prompts"]
    argv += [str(load.num_prompts), "--input-len", str(load.input_len), "--output-len", str(load.output_len)]
    stdout, cpu, wall = _measured([*argv, "--no-correctness", "--json"], child_environment(), REPO_ROOT)
    level = json.loads(stdout)["metrics"]["levels"][0]
    return ClientRun(
        "opsloop",
        load,
        cpu,
        wall,
        level["completed"],
        level["output_throughput"],
        level["ttft_ms"]["median"],
        level["itl_ms"]["median"],
        level["itl_ms"]["mean"],
        level["tpot_ms"]["median"],
    )


def run_vllm(python: str, base_url: str, model: str, load: Load, scratch: Path) -> ClientRun:
    result = scratch / f"vllm-bench-{time.monotonic_ns()}.json"
    argv = [python, "-c", VLLM_CLIENT, "--backend", "openai", "--base-url", base_url, "--endpoint", "/v1/completions"]
    argv += ["--model", model, "--dataset-name", "random", "--random-input-len", str(load.input_len)]
    argv += ["--random-output-len", str(load.output_len), "--random-range-ratio", "0", "--ignore-eos"]
    argv += ["--num-prompts", str(load.num_prompts), "--max-concurrency", str(load.concurrency), "--disable-tqdm"]
    argv += ["--save-result", "--result-dir", str(scratch), "--result-filename", result.name]
    _, cpu, wall = _measured(argv, {**os.environ, "HF_HUB_OFFLINE": "1"}, scratch)
    record = json.loads(result.read_text(encoding="utf-8"))
    return ClientRun(
        "vllm bench serve",
        load,
        cpu,
        wall,
        int(record["completed"]),
        float(record["output_throughput"]),
        record.get("median_ttft_ms"),
        record.get("median_itl_ms"),
        record.get("mean_itl_ms"),
        record.get("median_tpot_ms"),
    )


def per_token_us(long: ClientRun, short: ClientRun) -> float:
    tokens = long.load.num_prompts * (long.load.output_len - short.load.output_len)
    return (long.cpu_seconds - short.cpu_seconds) / tokens * 1e6


def medians(rounds: list[dict[str, ClientRun]]) -> dict[str, float | None]:
    """One client's figures, each the median over the rounds."""

    def median(values: list[float | None]) -> float | None:
        known = sorted(value for value in values if value is not None)
        return round(statistics.median(known), 3) if known else None

    return {
        "cpu_per_token_us": median([per_token_us(run["long"], run["short"]) for run in rounds]),
        "ttft_median_ms": median([run["long"].ttft_median_ms for run in rounds]),
        "itl_median_ms": median([run["long"].itl_median_ms for run in rounds]),
        "itl_mean_ms": median([run["long"].itl_mean_ms for run in rounds]),
        "tpot_median_ms": median([run["long"].tpot_median_ms for run in rounds]),
        "output_throughput": median([run["long"].output_throughput for run in rounds]),
        "client_cpu_seconds_long": median([run["long"].cpu_seconds for run in rounds]),
    }


def compare(opsloop: dict[str, float | None], reference: dict[str, float | None]) -> dict[str, float | None]:
    def difference(key: str) -> float | None:
        ours, theirs = opsloop[key], reference[key]
        return None if ours is None or theirs is None else round(ours - theirs, 3)

    ours, theirs = opsloop["output_throughput"], reference["output_throughput"]
    cpu_ours, cpu_theirs = opsloop["cpu_per_token_us"], reference["cpu_per_token_us"]
    return {
        "ttft_median_ms_difference": difference("ttft_median_ms"),
        "itl_median_ms_difference": difference("itl_median_ms"),
        "itl_mean_ms_difference": difference("itl_mean_ms"),
        "tpot_median_ms_difference": difference("tpot_median_ms"),
        "output_throughput_relative": round(ours / theirs - 1, 4) if ours and theirs else None,
        "cpu_per_token_ratio": round(cpu_theirs / cpu_ours, 2) if cpu_ours and cpu_theirs else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--port", type=int, default=0, help="Server port (default: a free one)")
    parser.add_argument("--base-url", default="", help="Measure a vLLM already serving here instead of starting one")
    parser.add_argument("--model", default="", help="With --base-url: the model as served (default: the test model)")
    options = parser.parse_args(argv)
    paths = prepare()
    python, model = paths["OPSLOOP_REAL_ENGINE_PYTHON"], paths["OPSLOOP_TEST_MODEL"]
    long = Load(options.concurrency, options.requests, options.input_len, options.output_len)
    short = Load(options.concurrency, options.requests, options.input_len, SHORT_OUTPUT)
    with tempfile.TemporaryDirectory(prefix="opsloop-real-bench-") as directory:
        scratch = Path(directory)
        server = None
        if options.base_url:
            base_url = options.base_url.rstrip("/")
        else:
            port = options.port or _free_port()
            note(f"starting vLLM on port {port} (compiled; ready in about a minute)")
            server = start_server(python, model, port, scratch / "vllm.log")
            base_url = f"http://127.0.0.1:{port}"
        try:
            runs = measure(options.rounds, python, base_url, options.model or model, (long, short), scratch)
            version = _server_version(base_url)
        finally:
            if server is not None:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=60)
    emit(
        {
            "benchmark": "real_engine_bench",
            "engine": f"vllm {version}" + ("" if options.base_url else " (vllm-cpu), tiny test model"),
            "load": vars(options),
            "medians": {client: medians(rounds) for client, rounds in runs.items()},
            "agreement": compare(medians(runs["opsloop"]), medians(runs["vllm"])),
            "runs": {
                client: [{name: run.summary() for name, run in pair.items()} for pair in rounds]
                for client, rounds in runs.items()
            },
            "machine": machine(),
        }
    )


def measure(
    rounds: int, python: str, base_url: str, model: str, loads: tuple[Load, Load], scratch: Path
) -> dict[str, list[dict[str, ClientRun]]]:
    """Both clients, ``rounds`` times, in alternating order; each round a long and a short run per client."""
    run_opsloop(base_url, model, loads[1])  # the server's first requests are slower: warm both paths
    runs: dict[str, list[dict[str, ClientRun]]] = {"opsloop": [], "vllm": []}
    for number in range(rounds):
        for client in ["opsloop", "vllm"] if number % 2 == 0 else ["vllm", "opsloop"]:
            note(f"round {number + 1}: {client}")
            runs[client].append(
                {
                    name: run_opsloop(base_url, model, load)
                    if client == "opsloop"
                    else run_vllm(python, base_url, model, load, scratch)
                    for name, load in zip(("long", "short"), loads, strict=True)
                }
            )
    return runs


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_version(base_url: str) -> str:
    with urllib.request.urlopen(f"{base_url}/version", timeout=10) as response:
        return str(json.loads(response.read())["version"])


if __name__ == "__main__":
    main()
