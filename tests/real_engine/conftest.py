"""Fixtures for tests against a real vLLM (CPU build) with the tiny test model.

The engine environment and the models are built once per machine (cached by
``scripts/ci-real-engine-setup``; the first build takes a few minutes) and once per session here.
``OPSLOOP_SKIP_REAL_ENGINE=1`` skips these tests, saying so; any other failure to prepare the engine
fails them, so a broken set-up is never mistaken for a pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_engine import AgentEngine, end_engines, engine_config, launch_ready
from support.real_engine import RealEngine, RealEngineUnavailable, prepare

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
def baseline(real_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentEngine]:
    """One vLLM with the tiny model for the whole session, launched by the agent's launch_engine (eager: the
    tests that share it are about behaviour, not speed), stopped by its stop_engine at the end."""
    state_dir = tmp_path_factory.mktemp("baseline") / "state"
    engine = launch_ready(real_engine, state_dir, "baseline", engine_config(real_engine, disable_cuda_graph=True))
    yield engine
    try:
        engine.tool("stop_engine", {"name": engine.name, "grace_seconds": 30})
    finally:
        end_engines(state_dir)


@pytest.fixture(scope="session")
def baseline_reference(baseline: AgentEngine) -> list[str]:
    """The baseline's greedy outputs on the lossless gate's prompts, recorded by check_lossless."""
    document = baseline.tool("check_lossless", {"base_url": baseline.base_url, "model": baseline.served_model})
    assert document["ok"], document
    verdict = document["output"]["verdict"]
    assert verdict["compared"] is False and len(verdict["outputs"]) == 4
    outputs: list[str] = verdict["outputs"]
    return outputs
