"""The benchmark client against sglang.bench_serving: client CPU, highest request rate, accuracy.

Both clients load the same fast loopback streaming server (:mod:`benchmarks.stream_server`), one run
after the other in the same invocation, each as its own process (``agent bench`` and ``python -m
sglang.bench_serving`` from sglang 0.5.8 in its own environment, created on first use; see
:mod:`benchmarks.sglang_env`). ``--reference skip`` measures opsloop alone.

1. CPU: three runs per client: A = N requests x L tokens, B = N x S tokens, C = M x S tokens (M > N).
   CPU per streamed token = (A - B) / (N (L - S)); CPU per request = (C - B) / (M - N). Start-up
   (imports, tokenizer loading, warm-up) is the same in all three runs and cancels out.
2. Highest request rate: many short requests (all tokens at once) at a high concurrency, back to back;
   the request rate each client sustains, with the server's own CPU use alongside.
3. Accuracy: a server with known time to first token and inter-token delay; the clients' medians are
   compared with what the server measured it did (and with the configured values), and the output
   throughputs of the two clients with each other.

    python -m benchmarks.bench_client
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.clients import ClientRun, Load, RunningServer, run_opsloop, run_sglang, stream_server
from benchmarks.common import emit, machine, note, ratio
from benchmarks.sglang_env import SGLANG_VERSION, default_venv, ensure_reference

Runner = Callable[[str, Load, Path], ClientRun]
INPUT_LEN = 64


def cpu_costs(runner: Runner, server: RunningServer, options: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    long = runner(server.url, Load(options.concurrency, options.requests, INPUT_LEN, options.long_tokens), scratch)
    base = runner(server.url, Load(options.concurrency, options.requests, INPUT_LEN, options.short_tokens), scratch)
    many = runner(
        server.url, Load(options.concurrency, options.many_requests, INPUT_LEN, options.short_tokens), scratch
    )
    runs = [long, base, many]
    failed = sum(run.load.num_prompts - run.completed for run in runs)
    per_token = (long.cpu_seconds - base.cpu_seconds) / max(long.output_tokens - base.output_tokens, 1)
    per_request = (many.cpu_seconds - base.cpu_seconds) / max(many.completed - base.completed, 1)
    return {
        "runs": [run.summary() for run in runs],
        "failed_requests": failed,
        "cpu_us_per_token": round(per_token * 1e6, 2),
        "cpu_us_per_request": round(per_request * 1e6, 1),
        "cpu_us_per_request_excluding_tokens": round((per_request - options.short_tokens * per_token) * 1e6, 1),
    }


def request_rate(runner: Runner, options: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    with stream_server(0.0, 0.0) as server:
        before = server.cpu_seconds()
        run = runner(
            server.url, Load(options.rate_concurrency, options.rate_requests, 16, options.short_tokens), scratch
        )
        server_cpu = server.cpu_seconds() - before
    duration = run.completed / run.request_throughput if run.request_throughput else run.wall_seconds
    return {**run.summary(), "server_cpu_share": round(server_cpu / duration, 2) if duration else None}


def accuracy(runner: Runner, options: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    with stream_server(options.ttft_ms, options.itl_ms) as server:
        run = runner(
            server.url,
            Load(options.accuracy_concurrency, options.accuracy_requests, INPUT_LEN, options.accuracy_tokens),
            scratch,
        )
        truth = server.stats()

    def error(measured: float | None, reference: float | None) -> float | None:
        return None if measured is None or reference is None else round(measured - reference, 3)

    return {
        **run.summary(),
        "server_ttft_ms_median": truth["ttft_ms_median"],
        "server_itl_ms_median": truth["itl_ms_median"],
        "ttft_error_ms": error(run.ttft_median_ms, truth["ttft_ms_median"]),
        "itl_error_ms": error(run.itl_median_ms, truth["itl_ms_median"]),
        "ttft_error_vs_configured_ms": error(run.ttft_median_ms, options.ttft_ms),
        "itl_error_vs_configured_ms": error(run.itl_median_ms, options.itl_ms),
    }


def measure(runner: Runner, options: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    with stream_server(0.0, options.stream_itl_ms) as server:
        cpu = cpu_costs(runner, server, options, scratch)
    return {"cpu": cpu, "rate": request_rate(runner, options, scratch), "accuracy": accuracy(runner, options, scratch)}


def comparison(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    throughput_gap = ratio(
        ours["accuracy"]["output_throughput"] - theirs["accuracy"]["output_throughput"],
        theirs["accuracy"]["output_throughput"],
        4,
    )
    token_ratio = ratio(theirs["cpu"]["cpu_us_per_token"], ours["cpu"]["cpu_us_per_token"])
    return {
        "cpu_per_token_sglang_over_opsloop": token_ratio,
        "cpu_per_request_sglang_over_opsloop": ratio(
            theirs["cpu"]["cpu_us_per_request"], ours["cpu"]["cpu_us_per_request"]
        ),
        "request_rate_opsloop_over_sglang": ratio(
            ours["rate"]["request_throughput"], theirs["rate"]["request_throughput"]
        ),
        "output_throughput_gap": throughput_gap,
        "targets": {
            "cpu_per_token_ratio_min": 2.0,
            "cpu_met": token_ratio is not None and token_ratio >= 2.0,
            "throughput_gap_max": 0.03,
            "throughput_met": throughput_gap is not None and abs(throughput_gap) <= 0.03,
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--reference",
        choices=["auto", "skip"],
        default="auto",
        help="auto: compare with sglang.bench_serving (creating its environment if needed)",
    )
    parser.add_argument("--sglang-venv", type=Path, default=None, help=f"Default: {default_venv()}")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--stream-itl-ms", type=float, default=2.0, help="Token spacing in the CPU runs")
    parser.add_argument("--requests", type=int, default=64, help="N: requests of runs A and B")
    parser.add_argument("--long-tokens", type=int, default=512, help="L: tokens per request of run A")
    parser.add_argument("--short-tokens", type=int, default=8, help="S: tokens per request of runs B and C")
    parser.add_argument("--many-requests", type=int, default=1024, help="M: requests of run C")
    parser.add_argument("--rate-requests", type=int, default=2000)
    parser.add_argument("--rate-concurrency", type=int, default=64)
    parser.add_argument("--ttft-ms", type=float, default=20.0, help="Accuracy server: time to first token")
    parser.add_argument("--itl-ms", type=float, default=5.0, help="Accuracy server: inter-token delay")
    parser.add_argument("--accuracy-requests", type=int, default=64)
    parser.add_argument("--accuracy-concurrency", type=int, default=8)
    parser.add_argument("--accuracy-tokens", type=int, default=64)
    options = parser.parse_args(argv)
    if not (options.many_requests > options.requests > 0 and options.long_tokens > options.short_tokens > 1):
        parser.error("need --many-requests > --requests > 0 and --long-tokens > --short-tokens > 1")
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "bench_client",
        "server": "benchmarks.stream_server (loopback)",
        "endpoint": "/v1/completions",
    }
    with tempfile.TemporaryDirectory(prefix="opsloop-client-bench-") as scratch:
        directory = Path(scratch)
        note("opsloop client")
        result["opsloop"] = measure(run_opsloop, options, directory)
        if options.reference == "skip":
            result["sglang"] = {"skipped": "--reference skip"}
        else:
            reference = ensure_reference(options.sglang_venv or default_venv(), directory / "tokenizer")
            if isinstance(reference, str):
                note(f"skipping the sglang.bench_serving comparison: {reference}")
                result["sglang"] = {"skipped": reference}
            else:
                note(f"sglang.bench_serving {SGLANG_VERSION}")

                def sglang(url: str, load: Load, where: Path) -> ClientRun:
                    return run_sglang(reference, url, load, where)

                result["sglang"] = {"version": SGLANG_VERSION, **measure(sglang, options, directory)}
                result["comparison"] = comparison(result["opsloop"], result["sglang"])
    accuracy_ours = result["opsloop"]["accuracy"]
    result["accuracy_target"] = {
        "max_error_ms": 1.0,
        "met": all(
            value is not None and abs(value) <= 1.0
            for value in (accuracy_ours["ttft_error_ms"], accuracy_ours["itl_error_ms"])
        ),
    }
    result["wall_seconds"] = round(time.perf_counter() - started, 1)
    result["machine"] = machine()
    emit(result)


if __name__ == "__main__":
    main()
