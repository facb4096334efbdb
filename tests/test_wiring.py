"""Wiring: a resumed run is rebuilt on the host it started with."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_agent, write_script


def test_resume_uses_the_simulated_host_the_run_started_with(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = write_script(
        tmp_path / "probe.json",
        [{"tool": "probe_system"}, {"ask": "probe again?"}, {"tool": "probe_system"}, {"finish": "probed twice"}],
    )
    first = run_agent("run", "-g", "probe", "--sim", "kimi-sm120", "--script", script, "--state-dir", state_dir)
    assert first.returncode == 3, first.stderr
    state_dir.joinpath("latest.json").write_text(  # forget the first probe's facts, keep the run settings
        json.dumps({**json.loads(state_dir.joinpath("latest.json").read_text()), "environment": {}})
    )
    resumed = run_agent("resume", state_dir, "--answer", "yes")  # no --sim: it comes from the state
    assert resumed.returncode == 0, resumed.stderr
    state = json.loads(state_dir.joinpath("latest.json").read_text())
    assert state["run"]["simulated_scenario"] == "kimi-sm120"
    assert len(state["environment"]["gpus"]) == 8 and state["environment"]["interconnect"] == "pcie"
