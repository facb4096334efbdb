"""Scenario files: built-ins load, invalid files fail with an error naming the field, rules match real flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sim import scenario_text, write_scenario

from twin.loader import ScenarioError, builtin_names, load_scenario
from twin.rules import Condition, LaunchFacts, When

BUILTINS = {
    "kimi-sm120",
    "vllm-eagle3",
    "h100-healthy",
    "oom",
    "cuda-graph",
    "port-in-use",
    "gpu-fault",
    "unknown-crash",
}


def test_every_builtin_scenario_loads() -> None:
    assert set(builtin_names()) >= BUILTINS
    for name in BUILTINS:
        scenario, path = load_scenario(name)
        assert scenario.name == name and path.suffix == ".toml"
        assert scenario.host.gpu_count >= 1


def test_seed_scenario_describes_the_seed_host() -> None:
    scenario, _ = load_scenario("kimi-sm120")
    assert scenario.host.gpu_count == 8 and scenario.host.interconnect == "pcie"
    assert scenario.host.gpu_group(0).compute_capability == "12.0"
    assert scenario.host.cpu_model.startswith("AMD EPYC 9335") and scenario.host.ram_gib == 449.0
    assert (scenario.model.size_gb, scenario.model.num_layers, scenario.model.num_experts) == (547.0, 61, 384)
    assert scenario.model.attention == "mla"
    assert (scenario.performance.single_stream_tok_s, scenario.performance.peak_tok_s) == (63.6, 2370.0)


def test_a_user_file_loads_by_path(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, name="my-box")
    scenario, loaded_from = load_scenario(str(path))
    assert scenario.name == "my-box" and loaded_from == path.resolve()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("cpu_cores = 16", "cpu_cores = 16\ncpu_modle = 'typo'"), "host.cpu_modle: Extra inputs are not permitted"),
        (("memory_mib = 81559", 'memory_mib = "lots"'), "host.gpus[0].memory_mib"),
        (("format_version = 1", "format_version = 7"), "format_version: unsupported format_version 7"),
        (('interconnect = "pcie"', 'interconnect = "infiniband"'), "host.interconnect"),
        (("single_stream_tok_s = 100.0", "single_stream_tok_s = 900.0"), "peak_tok_s must be at least"),
    ],
)
def test_invalid_fields_are_named(tmp_path: Path, edit: tuple[str, str], expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(scenario_text().replace(*edit), encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(str(path))
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_fault_on_a_missing_gpu_is_rejected(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, host_extra="[[host.faults]]\ngpu = 5\nxid = [48]")
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.gpu is 5 but the host has 2 GPUs"):
        load_scenario(str(path))


def test_a_rule_on_an_unknown_flag_is_rejected(tmp_path: Path) -> None:
    rules = '[[rules]]\nname = "typo"\noutcome = "crash"\n[rules.when.flags]\n"--atention-backend" = "fa3"\n'
    path = write_scenario(tmp_path, rules=rules)
    with pytest.raises(ScenarioError, match=r"rules\[0\]\.when\.flags: unknown sglang or vllm flag '--atention"):
        load_scenario(str(path))


def test_broken_toml_and_missing_files_are_clear(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("format_version = \n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="is not valid TOML"):
        load_scenario(str(broken))
    with pytest.raises(ScenarioError, match=r"not a built-in name .*kimi-sm120"):
        load_scenario("no-such-scenario")


def _facts(flags: dict[str, object], explicit: set[str], env: dict[str, str]) -> LaunchFacts:
    return LaunchFacts(engine="sglang", flags=flags, explicit=explicit, env=env)


def test_conditions_see_effective_flags_and_environment() -> None:
    when = When.model_validate(
        {
            "flags": {"--attention-backend": ["fa3", "flashmla"], "--mem-fraction-static": {"gt": 0.8}},
            "env": {"NCCL_P2P_DISABLE": {"not_in": ["1"]}},
        }
    )
    defaulted = _facts({"--attention-backend": "fa3", "--mem-fraction-static": 0.85}, set(), {})
    assert when.matches(defaulted)  # a default value counts; an unset variable is not "1"
    assert not when.matches(
        _facts({"--attention-backend": "fa3", "--mem-fraction-static": 0.85}, set(), {"NCCL_P2P_DISABLE": "1"})
    )
    assert not when.matches(_facts({"--attention-backend": "triton", "--mem-fraction-static": 0.85}, set(), {}))
    assert not when.matches(_facts({"--attention-backend": "fa3", "--mem-fraction-static": 0.7}, set(), {}))


def test_present_and_boolean_conditions() -> None:
    written = Condition.model_validate({"present": True})
    assert written.holds(None, present=True) and not written.holds("x", present=False)
    when = When.model_validate({"engine": "vllm", "flags": {"--enforce-eager": True}})
    assert when.matches(LaunchFacts("vllm", {"--enforce-eager": True}, {"--enforce-eager"}, {}))
    assert not when.matches(LaunchFacts("vllm", {"--enforce-eager": False}, set(), {}))
    assert not when.matches(LaunchFacts("sglang", {"--enforce-eager": True}, set(), {}))
    with pytest.raises(ValueError, match="at least one of"):
        Condition.model_validate({})


def test_the_documented_example_is_a_valid_scenario(tmp_path: Path) -> None:
    document = (Path(__file__).resolve().parent.parent / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = document.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.toml"
    path.write_text(example, encoding="utf-8")
    scenario, _ = load_scenario(str(path))
    assert scenario.name == "my-box" and scenario.rules[0].when.flags == {"--attention-backend": "flashinfer"}
