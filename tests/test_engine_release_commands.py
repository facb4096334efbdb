"""Every command line the flag builders emit parses with that release's own flags (from the release data).

For each release read and each feature combination the runbook uses, the builder either produces a
command the release's argparse accepts, or refuses with the missing feature named: never a command the
real engine would reject.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine_facts.accepted_flags import from_release_data
from engine_facts.release_facts import known_releases, load_facts, release_view
from engine_facts.versions import parse_release
from tools.engines.build import build_command
from tools.engines.command import FeatureMissing
from tools.engines.config import EngineLaunchConfig

PYTHON = "/envs/engine/bin/python"
DRAFTER = "/models/kimi-eagle3"
COMBINATIONS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "eagle3": {
        "speculative": {
            "draft_model_path": DRAFTER,
            "num_steps": 3,
            "eagle_topk": 1,
            "num_draft_tokens": 4,
            "enable_spec_v2": True,
        }
    },
    "ngram": {"speculative": {"algorithm": "NGRAM", "num_steps": 3}},
    "attention_backend": {"attention_backend": "triton"},
    "cuda_graph_cap": {"cuda_graph_max_bs": 32},
    "no_cuda_graph": {"disable_cuda_graph": True},
    "tp_dp_ep": {"tp_size": 4, "dp_size": 2, "ep_size": 8, "dp_attention": True},
    "multi_node_head": {"tp_size": 16, "nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:25000"},
    "multi_node_worker": {"tp_size": 16, "nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:25000"},
}
CASES = [
    (engine, entry.version, name)
    for engine in ("sglang", "vllm")
    for entry in load_facts().engines[engine].releases
    for name in COMBINATIONS
]


def engine_arguments(engine: str, argv: list[str]) -> list[str]:
    if engine == "sglang":
        return argv[argv.index("sglang.launch_server") + 1 :]
    return (
        argv[argv.index("serve") + 1 :]
        if "serve" in argv
        else argv[argv.index("vllm.entrypoints.openai.api_server") + 1 :]
    )


@pytest.mark.parametrize(("engine", "version", "combination"), CASES)
def test_builder_output_parses_with_the_release_flags(engine: str, version: str, combination: str) -> None:
    config = EngineLaunchConfig.model_validate(
        {"engine": engine, "model_path": "/models/Kimi-K2.5", "model_attention": "mla", **COMBINATIONS[combination]}
    )
    number = parse_release(version)
    assert number is not None
    release, flags = release_view(engine, number), from_release_data(engine, number)
    assert release is not None and flags is not None
    try:
        command = build_command(config, PYTHON, version, compute_capability="12.0")
    except FeatureMissing as refused:
        assert refused.missing and all(":" in item for item in refused.missing)
        return
    parser = flags.parser(f"{engine} serve")
    parser.exit_on_error = False
    parsed = parser.parse_args(engine_arguments(engine, command.argv))  # SystemExit here means: rejected
    assert parsed is not None
    for name in command.env:
        if name.startswith(("SGLANG_", "VLLM_")):
            assert name in release.env, f"{engine} {version} does not read {name}"


def test_every_release_is_covered_and_the_newest_refuses_nothing() -> None:
    assert [".".join(map(str, release)) for release in known_releases("sglang")] == [
        f"0.5.{patch}" for patch in range(8, 24)
    ]
    vllm = [".".join(map(str, release)) for release in known_releases("vllm")]
    assert {"0.7.3", "0.8.0", "0.8.5", "0.11.0", "0.12.0", "0.13.0", "0.33.0"} <= set(vllm)
    for engine, version in (("sglang", "0.5.23"), ("vllm", "0.33.0")):
        for combination, fields in COMBINATIONS.items():
            config = EngineLaunchConfig.model_validate(
                {"engine": engine, "model_path": "/m", "model_attention": "mla", **fields}
            )
            assert build_command(config, PYTHON, version, compute_capability="12.0").argv, combination
