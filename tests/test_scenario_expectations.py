"""Every scenario file with an expected outcome (tests/data/scenarios/*.toml) reaches it through the CLI.

The files are grounded in real engine logs (each names its sources) and their ``[expect]`` tables were
written before the agent was first run on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.expectations import run_expected
from support.runbook import stop_leftovers

SCENARIOS = sorted((Path(__file__).parent / "data" / "scenarios").glob("*.toml"))


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "state"
    yield directory
    stop_leftovers(directory)


def test_there_are_at_least_twelve_grounded_scenarios() -> None:
    assert len(SCENARIOS) >= 12
    for path in SCENARIOS:
        text = path.read_text(encoding="utf-8")
        assert "format_version = 2" in text and "sources = [" in text and "[expect]" in text, path.name


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[path.stem for path in SCENARIOS])
def test_the_scenario_reaches_its_expected_outcome(scenario: Path, state_dir: Path) -> None:
    problems = run_expected(scenario, state_dir)
    assert not problems, "\n".join(problems)
