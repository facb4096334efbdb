"""Fixtures for tests against a real vLLM (CPU build) with the tiny test model.

The engine environment and the models are built once per machine (cached by
``scripts/ci-real-engine-setup``; the first build takes a few minutes) and once per session here.
``OPSLOOP_SKIP_REAL_ENGINE=1`` skips these tests, saying so; any other failure to prepare the engine
fails them, so a broken set-up is never mistaken for a pass.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.real_engine import RealEngine, RealEngineUnavailable, VllmServer, prepare, start_ready

SKIP_VARIABLE = "OPSLOOP_SKIP_REAL_ENGINE"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real_engine)
            # The first test also pays for building the engine environment and a cold start.
            item.add_marker(pytest.mark.timeout(1800))


@pytest.fixture(scope="session")
def real_engine() -> RealEngine:
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"{SKIP_VARIABLE}=1: the real-engine tests were skipped on request")
    try:
        return prepare()
    except RealEngineUnavailable as error:
        pytest.fail(
            f"the real engine could not be prepared (set {SKIP_VARIABLE}=1 to skip these tests on purpose): {error}"
        )


@pytest.fixture(scope="session")
def vllm_server(real_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """One healthy vLLM server with the tiny model for the whole session."""
    log_path = tmp_path_factory.mktemp("real-vllm") / "vllm.log"
    server = start_ready(real_engine, log_path, ["--max-model-len", "1024"])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def died_after_ready(real_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> tuple[int | None, Path]:
    """A server that became ready and whose VLLM::Worker was then killed with SIGKILL: (exit code, log)."""
    log_path = tmp_path_factory.mktemp("real-vllm-died") / "vllm.log"
    server = start_ready(real_engine, log_path, ["--max-model-len", "1024"])
    try:
        killed = server.signal_children("VLLM::Worker", signal.SIGKILL)
        assert killed, "no VLLM::Worker process found"
        exit_code = server.wait_exit(120)
    finally:
        server.stop()
    return exit_code, log_path
