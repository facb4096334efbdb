"""``benchmarks.real_engine_bench`` against the session's real vLLM, with tiny loads, so the script keeps working.

Both clients must measure the same server: every request completes for each, and the agreement block compares
their figures. The figures themselves are not checked (they depend on the machine); docs/benchmarks.md has
them from a full run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.agent_engine import AgentEngine
from support.cli import agent_environment

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_real_engine_bench_measures_both_clients_on_one_server(baseline: AgentEngine) -> None:
    server = ["--base-url", baseline.base_url, "--model", baseline.served_model]
    load = ["--rounds", "1", "--requests", "4", "--concurrency", "2", "--input-len", "32", "--output-len", "24"]
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.real_engine_bench", *server, *load],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=agent_environment(),
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    assert len(lines) == 1, completed.stdout[-2000:]
    result: dict[str, Any] = json.loads(lines[0])
    assert result["benchmark"] == "real_engine_bench" and result["engine"] == "vllm 0.32.0"
    for client in ("opsloop", "vllm"):
        (pair,) = result["runs"][client]
        assert pair["long"]["completed"] == pair["short"]["completed"] == 4
        assert pair["long"]["output_throughput"] > 0 and pair["long"]["cpu_seconds"] > 0
        assert result["medians"][client]["ttft_median_ms"] is not None
    agreement = result["agreement"]
    assert agreement["output_throughput_relative"] is not None and agreement["ttft_median_ms_difference"] is not None
