"""The two benchmark clients as processes, and the loopback server they load, for the client benchmark.

Each client run is a child process (``agent bench`` for opsloop, ``python -m sglang.bench_serving``
for the reference); its CPU time is the growth of ``RUSAGE_CHILDREN`` (user + system) across the
run, which counts that child alone because the server, also a child, is still running then.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import REPO_ROOT, child_environment
from benchmarks.sglang_env import Reference, offline_environment

MODEL = "bench-model"
RUN_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Load:
    concurrency: int
    num_prompts: int
    input_len: int
    output_len: int


@dataclass
class ClientRun:
    client: str
    load: Load
    cpu_seconds: float
    wall_seconds: float
    completed: int
    output_tokens: int
    request_throughput: float
    output_throughput: float
    ttft_median_ms: float | None
    itl_median_ms: float | None

    def summary(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "concurrency": self.load.concurrency,
            "requests": self.load.num_prompts,
            "output_len": self.load.output_len,
            "completed": self.completed,
            "output_tokens": self.output_tokens,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
            "request_throughput": round(self.request_throughput, 2),
            "output_throughput": round(self.output_throughput, 1),
            "ttft_median_ms": None if self.ttft_median_ms is None else round(self.ttft_median_ms, 3),
            "itl_median_ms": None if self.itl_median_ms is None else round(self.itl_median_ms, 3),
        }


class ClientError(RuntimeError):
    pass


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measured(argv: list[str], environment: dict[str, str], cwd: Path) -> tuple[str, float, float]:
    cpu, wall = _children_cpu(), time.perf_counter()
    result = subprocess.run(
        argv, capture_output=True, text=True, env=environment, cwd=cwd, timeout=RUN_TIMEOUT_S, check=False
    )
    wall, cpu = time.perf_counter() - wall, _children_cpu() - cpu
    if result.returncode != 0:
        raise ClientError(
            f"{' '.join(argv[:4])} exited with {result.returncode}: {(result.stderr or result.stdout).strip()[-800:]}"
        )
    return result.stdout, cpu, wall


def run_opsloop(base_url: str, load: Load, scratch: Path) -> ClientRun:
    argv = [
        sys.executable,
        "-m",
        "agent",
        "bench",
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--endpoint",
        "completions",
        "--concurrency",
        str(load.concurrency),
        "--num-prompts",
        str(load.num_prompts),
        "--input-len",
        str(load.input_len),
        "--output-len",
        str(load.output_len),
        "--no-correctness",
        "--json",
    ]
    stdout, cpu, wall = _measured(argv, child_environment(), REPO_ROOT)
    level = json.loads(stdout)["metrics"]["levels"][0]
    return ClientRun(
        client="opsloop",
        load=load,
        cpu_seconds=cpu,
        wall_seconds=wall,
        completed=level["completed"],
        output_tokens=level["output_tokens"],
        request_throughput=level["request_throughput"],
        output_throughput=level["output_throughput"],
        ttft_median_ms=level["ttft_ms"]["median"],
        itl_median_ms=level["itl_ms"]["median"],
    )


def run_sglang(reference: Reference, base_url: str, load: Load, scratch: Path) -> ClientRun:
    output = scratch / f"bench_serving-{time.monotonic_ns()}.jsonl"
    argv = [
        str(reference.python),
        "-m",
        "sglang.bench_serving",
        "--backend",
        "sglang-oai",
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--tokenizer",
        str(reference.tokenizer),
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(load.input_len),
        "--random-output-len",
        str(load.output_len),
        "--random-range-ratio",
        "1.0",
        "--num-prompts",
        str(load.num_prompts),
        "--max-concurrency",
        str(load.concurrency),
        "--request-rate",
        "inf",
        "--warmup-requests",
        "1",
        "--seed",
        "1",
        "--disable-tqdm",
        "--output-file",
        str(output),
    ]
    _, cpu, wall = _measured(argv, offline_environment(), scratch)
    record = json.loads(output.read_text(encoding="utf-8").splitlines()[-1])
    return ClientRun(
        client="sglang.bench_serving",
        load=load,
        cpu_seconds=cpu,
        wall_seconds=wall,
        completed=int(record["completed"]),
        output_tokens=int(record["total_output_tokens"]),
        request_throughput=float(record["request_throughput"]),
        output_throughput=float(record["output_throughput"]),
        ttft_median_ms=record.get("median_ttft_ms"),
        itl_median_ms=record.get("median_itl_ms"),
    )


@dataclass
class RunningServer:
    url: str
    pid: int

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as response:  # loopback only
            stats: dict[str, Any] = json.loads(response.read())
        return stats

    def cpu_seconds(self) -> float:
        times = psutil.Process(self.pid).cpu_times()
        return float(times.user + times.system)


@contextmanager
def stream_server(ttft_ms: float, itl_ms: float) -> Iterator[RunningServer]:
    """A fresh :mod:`benchmarks.stream_server` process on loopback, stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.stream_server", "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=child_environment(),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            process.kill()
            raise ClientError(f"the benchmark server did not start: {line!r} {process.communicate()[1][-500:]}")
        yield RunningServer(url=f"http://127.0.0.1:{int(line.split()[1])}", pid=process.pid)
    finally:
        process.kill()
        process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
