"""``agent bench`` as a real process against the loopback server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.bench import fake_server
from typer.testing import CliRunner

from agent.cli import app
from agent.store import StateStore

AGENT = [sys.executable, "-c", "from agent.cli import main; main()"]


def agent(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENT, *arguments], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_bench_prints_a_table_and_stores_the_run(tmp_path: Path) -> None:
    with fake_server("--flavor", "vllm", "--itl-ms", "1") as url:
        table = agent(
            "bench",
            "--base-url",
            url,
            "--model",
            "m",
            "--concurrency",
            "1,4",
            "--num-prompts",
            "8",
            "--input-len",
            "32",
            "--output-len",
            "8",
            cwd=tmp_path,
        )
        stored = agent(
            "bench",
            "--base-url",
            url,
            "--model",
            "m",
            "--concurrency",
            "2",
            "--num-prompts",
            "4",
            "--input-len",
            "32",
            "--output-len",
            "8",
            "--json",
            "--no-correctness",
            "--state-dir",
            str(tmp_path / "state"),
            cwd=tmp_path,
        )
    assert table.returncode == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines()]
    assert rows[0][0] == "bench1:" and "passed 5/5" in table.stdout
    assert [row[0] for row in rows[3:5]] == ["1", "4"] and rows[3][1] == "8/0" and rows[3][-1] == "2.50"
    assert stored.returncode == 0, stored.stderr
    record = json.loads(stored.stdout)
    assert record["metrics"]["levels"][0]["completed"] == 4 and "correctness" not in record["metrics"]
    state = StateStore(tmp_path / "state").load()
    assert [item.id for item in state.benchmarks] == ["bench1"]


def test_bench_exit_codes(tmp_path: Path) -> None:
    """In-process through the same typer app (the case above runs the real process)."""
    runner = CliRunner()
    bad = runner.invoke(app, ["bench", "--base-url", "http://127.0.0.1:1", "--model", "m", "--concurrency", "0"])
    assert bad.exit_code == 2 and "--concurrency" in bad.output
    with fake_server("--fail-every", "1") as url:
        failing = runner.invoke(
            app,
            ["bench", "--base-url", url, "--model", "m", "--num-prompts", "2", "--no-correctness", "--output-len", "4"],
        )
    assert failing.exit_code == 1 and "2x HTTP 500" in failing.output
