"""Property-based fuzzing of the scenario, config and state file loaders: a mutated file loads or is
refused with a clear error (a scenario error, a usage error naming the field, a state file error that
leaves the file untouched). ``OPSLOOP_HEAVY=1`` multiplies the examples by twenty.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reliability import heavy

from agent.config import load_config
from agent.events import UsageError
from agent.state import ProjectState
from agent.store import StateFileError, StateStore, read_state
from tools.hosts.sim.host import SimHost
from twin.loader import ScenarioError, builtin_names, load_scenario, resolve_scenario_path

EXAMPLES = 400 if heavy() else 20


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    how = draw(st.sampled_from(["line", "line", "delete", "truncate", "insert", "bytes"]))
    index = draw(st.integers(0, max(len(lines) - 1, 0)))
    junk = draw(
        st.sampled_from(
            [
                "= 1",
                "[x",
                "a = ",
                "]]",
                '"',
                "x = nan",
                "x = -1e999",
                "[[host.gpus]]",
                "count = -3",
                "time_scale = 0",
                "memory_mib = 1e30",
                "name = 5",
            ]
        )
        | st.text(max_size=30)
    )
    if how == "line" and lines:
        key = lines[index].split("=")[0]
        value = draw(st.sampled_from(["-1", "0", "1e309", '""', "[]", "{}", "true", junk]))
        lines[index] = f"{key}= {value}"
    elif how == "delete" and lines:
        del lines[index]
    elif how == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    elif how == "insert":
        lines.insert(index, junk)
    else:
        return text + draw(st.text(max_size=20))
    return "\n".join(lines) + "\n"


SCENARIO_TEXTS = {name: resolve_scenario_path(name).read_text(encoding="utf-8") for name in builtin_names()}


@pytest.mark.parametrize("name", ["kimi-sm120", "h100-healthy"])
def test_a_mutated_scenario_loads_or_gives_a_scenario_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / "scenario.toml"

    @settings(max_examples=EXAMPLES * 2, deadline=None, database=None)
    @given(text=mutated_text(SCENARIO_TEXTS[name]))
    def run(text: str) -> None:
        path.write_text(text, encoding="utf-8")
        try:
            scenario, _ = load_scenario(str(path))
        except ScenarioError as error:
            assert str(path) in str(error) or "scenario" in str(error)
            return
        host = SimHost(scenario, path, tmp_path / "state")  # a scenario that loads must also run
        assert host.probe_gpus() is not None

    run()


CONFIG_EXAMPLE = """policy = "runbook"
[limits]
max_steps = 400
max_cost_usd = 20
[notify]
channels = ["ntfy:https://ntfy.example/opsloop", "email:oncall@example.com"]
attempts = 3
[notify.smtp]
host = "smtp.example.com"
port = 587
starttls = true
user = "opsloop"
[tools]
engine_python = "/opt/sglang/.venv/bin/python"
[llm]
provider = "openai"
base_url = "http://127.0.0.1:30000/v1"
"""


def test_a_mutated_config_file_or_environment_loads_or_gives_a_usage_error(tmp_path: Path) -> None:
    assert tomllib.loads(CONFIG_EXAMPLE)
    path = tmp_path / "agent.toml"

    @settings(max_examples=EXAMPLES * 3, deadline=None, database=None)
    @given(
        text=mutated_text(CONFIG_EXAMPLE),
        environ=st.dictionaries(
            st.sampled_from(
                [
                    "OPSLOOP_POLICY",
                    "OPSLOOP_MAX_STEPS",
                    "OPSLOOP_NOTIFY",
                    "OPSLOOP_SMTP_PORT",
                    "OPSLOOP_MAX_COST_USD",
                    "OPSLOOP_SIM",
                    "OPSLOOP_SMTP_STARTTLS",
                    "OPSLOOP_LLM_PROVIDER",
                ]
            ),
            st.text(max_size=20) | st.sampled_from(["[", "[1]", "-1", "nan", "1e999"]),
            max_size=3,
        ),
    )
    def run(text: str, environ: dict[str, str]) -> None:
        path.write_text(text, encoding="utf-8")
        try:
            load_config(tmp_path, path, environ=environ)
        except UsageError as error:
            assert str(error)

    run()


def test_a_mutated_state_file_loads_or_is_refused_and_left_untouched(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "good")
    state = ProjectState(goal="a state to break")
    state.add_finding("f1", ["e1"])
    state.upsert_task("t1", "task")
    store.save(state)
    text = store.latest_path.read_text(encoding="utf-8")
    path = tmp_path / "latest.json"

    @settings(max_examples=EXAMPLES * 3, deadline=None, database=None)
    @given(mutated=mutated_text(text) | st.binary(max_size=200).map(lambda data: data.decode("latin-1")))
    def run(mutated: str) -> None:
        path.write_text(mutated, encoding="utf-8")
        written = path.read_bytes()
        try:
            read_state(path)
        except StateFileError as error:
            assert str(path) in str(error)
        assert path.read_bytes() == written

    run()
