"""Optional cross-check: run ``python -m sglang.bench_serving`` in the engine environment.

Offline-safe: the ``random-ids`` dataset downloads nothing, ``HF_HUB_OFFLINE=1``
stops hub look-ups, and a local tokenizer is passed when one is known (0.5.23 otherwise asks the
server's /model_info for it). One invocation per concurrency level; each appends one JSON object to
the output file (keys as ``bench_serving.py`` writes them), which is parsed into the same result model as ours.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tools.bench.runner import BenchParams, LevelReport
from tools.bench.spec import SpecAcceptance
from tools.bench.stats import Distribution, ErrorCount

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
HAS_SGLANG = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('sglang') else 3)"


class BenchOutputError(Exception):
    """bench_serving wrote no parsable result."""


def build_command(
    engine_python: str, params: BenchParams, concurrency: int, output_file: Path, tokenizer: str | None
) -> list[str]:
    backend = "sglang-oai-chat" if params.endpoint == "chat" else "sglang-oai"
    argv = [
        engine_python,
        "-m",
        "sglang.bench_serving",
        "--backend",
        backend,
        "--base-url",
        params.base_url.rstrip("/"),
        "--model",
        params.model,
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(params.input_len),
        "--random-output-len",
        str(params.output_len),
        "--random-range-ratio",
        "1.0",
        "--num-prompts",
        str(params.requests_for(concurrency)),
        "--max-concurrency",
        str(concurrency),
        "--request-rate",
        "inf" if params.request_rate is None else repr(params.request_rate),
        "--seed",
        str(params.seed),
        "--warmup-requests",
        str(params.warmup_requests),
        "--output-file",
        str(output_file),
    ]
    if tokenizer:
        argv += ["--tokenizer", tokenizer]
    if params.extra_body:
        argv += ["--extra-request-body", json.dumps(params.extra_body)]
    argv.append("--disable-tqdm")
    if not params.ignore_eos:
        argv.append("--disable-ignore-eos")
    return argv


def _number(record: dict[str, Any], key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _distribution(record: dict[str, Any], metric: str) -> Distribution:
    values = {name: _number(record, f"{name}_{metric}_ms") for name in ("mean", "median", "p90", "p99")}
    return Distribution(**values, count=int(record.get("completed") or 0))


def parse_record(record: dict[str, Any], num_requests: int) -> LevelReport:
    """One bench_serving JSONL object as a level report (p90 TTFT/ITL/TPOT exist from 0.5.23 only)."""
    completed = int(record.get("completed") or 0)
    rate = _number(record, "request_rate")
    accept = _number(record, "accept_length")
    errors = [message for message in record.get("errors") or [] if message]
    return LevelReport(
        concurrency=int(record.get("max_concurrency") or 0),
        request_rate=rate,
        num_requests=num_requests,
        completed=completed,
        failed=max(num_requests - completed, 0),
        duration_seconds=_number(record, "duration") or 0.0,
        request_throughput=_number(record, "request_throughput") or 0.0,
        input_tokens=int(record.get("total_input_tokens") or 0),
        output_tokens=int(record.get("total_output_tokens") or 0),
        output_throughput=_number(record, "output_throughput") or 0.0,
        total_throughput=_number(record, "total_throughput") or 0.0,
        token_counts_from="sglang.bench_serving",
        ttft_ms=_distribution(record, "ttft"),
        itl_ms=_distribution(record, "itl"),
        tpot_ms=_distribution(record, "tpot"),
        e2e_ms=_distribution(record, "e2e_latency"),
        errors=[ErrorCount(message=str(message)[:500], count=1) for message in errors[:10]],
        spec=SpecAcceptance(
            source="server_info",
            accept_length=accept,
            per_run=False,
            note="bench_serving reports the server's cumulative value since start",
        )
        if accept is not None and accept > 0
        else None,
    )


def last_record(text: str) -> dict[str, Any]:
    """The last JSON object of a JSONL file (bench_serving appends one per run)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError as error:
                raise BenchOutputError(f"bench_serving output is not JSON lines: {error}") from None
            if isinstance(value, dict):
                return value
    raise BenchOutputError("bench_serving wrote no result line")
