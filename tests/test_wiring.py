"""Wiring: optional parts are imported lazily; a missing one is a usage error, a broken one is not hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spine_helpers import run_agent, write_script

from agent.events import UsageError
from agent.wiring import optional_module


def test_a_missing_optional_module_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match=r"the frobnicator is not available .*agent\.policies\.frobnicator"):
        optional_module("agent.policies.frobnicator", "the frobnicator")


def test_a_module_whose_own_dependency_is_missing_is_not_disguised(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "half_installed_policy.py").write_text("import no_such_dependency_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_anywhere"):
        optional_module("half_installed_policy", "a policy")


def test_resume_uses_the_simulated_host_the_run_started_with(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    script = write_script(tmp_path / "probe.json", [{"tool": "probe_system"}, {"ask": "probe again?"},
                                                    {"tool": "probe_system"}, {"finish": "probed twice"}])
    first = run_agent("run", "-g", "probe", "--sim", "kimi-sm120", "--script", script, "--state-dir", state_dir)
    assert first.returncode == 3, first.stderr
    state_dir.joinpath("latest.json").write_text(  # forget the first probe's facts, keep the run settings
        json.dumps({**json.loads(state_dir.joinpath("latest.json").read_text()), "environment": {}}))
    resumed = run_agent("resume", state_dir, "--answer", "yes")  # no --sim: it comes from the state
    assert resumed.returncode == 0, resumed.stderr
    state = json.loads(state_dir.joinpath("latest.json").read_text())
    assert state["run"]["simulated_scenario"] == "kimi-sm120"
    assert len(state["environment"]["gpus"]) == 8 and state["environment"]["interconnect"] == "pcie"
