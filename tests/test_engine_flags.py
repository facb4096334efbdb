"""The flag builders across engine releases (SGLang 0.5.8 vs 0.5.23, vLLM old vs 0.33)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from engine_facts.versions import parse_release
from tools.engines.build import build_command
from tools.engines.command import FlagError, FlagsUnknown
from tools.engines.config import EngineLaunchConfig
from tools.logs.library import load_library

PYTHON = "/envs/engine/bin/python"


def config(**fields: Any) -> EngineLaunchConfig:
    base = {"engine": "sglang", "model_path": "/models/Kimi-K2.5"}
    return EngineLaunchConfig.model_validate({**base, **fields})


def value_after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_release_parsing() -> None:
    assert parse_release("0.5.10.post1") == (0, 5, 10)
    assert parse_release("0.11.0rc2") == (0, 11, 0)
    assert parse_release("0.5.10") > parse_release("0.5.9")  # type: ignore[operator]
    assert parse_release("0.0.0.dev11416") is None and parse_release(None) is None
    assert parse_release("0.5.21.dev3+g1a2b3c4") is None and parse_release("0.32.0+cpu") == (0, 32, 0)


def test_sglang_0_5_8_uses_the_old_graph_and_dp_attention_flags() -> None:
    command = build_command(
        config(
            tp_size=8, dp_size=8, dp_attention=True, cuda_graph_max_bs=64, disable_cuda_graph=True, mem_fraction=0.85
        ),
        PYTHON,
        "0.5.8",
    )
    argv = command.argv
    assert argv[:3] == [PYTHON, "-m", "sglang.launch_server"]
    assert value_after(argv, "--cuda-graph-max-bs") == "64"
    assert "--disable-cuda-graph" in argv
    assert value_after(argv, "--dp-size") == "8" and "--enable-dp-attention" in argv
    assert value_after(argv, "--mem-fraction-static") == "0.85"
    assert value_after(argv, "--tp-size") == "8"


def test_sglang_0_5_23_uses_the_renamed_flags() -> None:
    wanted = config(dp_size=8, dp_attention=True, cuda_graph_max_bs=64, disable_cuda_graph=True)
    command = build_command(wanted, PYTHON, "0.5.23")
    argv = command.argv
    assert "--cuda-graph-max-bs" not in argv  # an ambiguous prefix in 0.5.23
    assert value_after(argv, "--cuda-graph-max-bs-decode") == "64"
    assert "--disable-cuda-graph" not in argv and "--disable-decode-cuda-graph" in argv
    assert value_after(argv, "--attn-dp-size") == "8"
    assert "--enable-dp-attention" not in argv and "--dp-size" not in argv


def test_sglang_0_5_20_to_0_5_22_get_the_new_cap_flag_with_its_reason() -> None:
    command = build_command(config(cuda_graph_max_bs=32), PYTHON, "0.5.20")
    assert value_after(command.argv, "--cuda-graph-max-bs-decode") == "32"
    assert "--cuda-graph-max-bs" not in command.argv
    reason = next(choice.reason for choice in command.choices if choice.feature == "CUDA-graph batch cap")
    assert "sglang/srt/arg_groups/fields/exec_.py" in reason


def test_unknown_and_development_versions_are_not_taken_for_the_newest() -> None:
    for version in (None, "0.0.0.dev0", "0.5.21.dev12+g1a2b3c4", "0.6.0"):
        with pytest.raises(FlagsUnknown, match="--help"):
            build_command(config(cuda_graph_max_bs=32), PYTHON, version)


def test_eagle3_flags_and_sglang_adjustments() -> None:
    speculative = {
        "draft_model_path": "/models/kimi-eagle3",
        "num_steps": 3,
        "eagle_topk": 1,
        "num_draft_tokens": 6,
        "draft_attention_backend": "triton",
        "enable_spec_v2": True,
    }
    old = build_command(config(speculative=speculative), PYTHON, "0.5.8")
    assert value_after(old.argv, "--speculative-algorithm") == "EAGLE3"
    assert value_after(old.argv, "--speculative-draft-model-path") == "/models/kimi-eagle3"
    assert value_after(old.argv, "--speculative-num-draft-tokens") == "4"  # topk 1 forces steps + 1
    assert value_after(old.argv, "--speculative-draft-attention-backend") == "triton"
    assert old.env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    assert any("48" in note for note in old.notes)
    new = build_command(config(speculative=speculative, max_running_requests=128), PYTHON, "0.5.23")
    assert "SGLANG_ENABLE_SPEC_V2" not in new.env
    assert not any("48" in note for note in new.notes)
    assert value_after(new.argv, "--max-running-requests") == "128"


def test_eagle_needs_a_drafter() -> None:
    with pytest.raises(ValidationError, match="draft_model_path"):
        config(speculative={"algorithm": "EAGLE3"})


def test_attention_backend_checked_against_the_release() -> None:
    with pytest.raises(FlagError, match="dsa"):
        build_command(config(attention_backend="dsa"), PYTHON, "0.5.8")
    with pytest.raises(FlagError, match="cutlass_mla"):
        build_command(config(attention_backend="cutlass_mla"), PYTHON, "0.5.23")
    assert (
        value_after(
            build_command(config(attention_backend="cutlass_mla"), PYTHON, "0.5.19").argv, "--attention-backend"
        )
        == "cutlass_mla"
    )
    triton = build_command(config(attention_backend="triton"), PYTHON, "0.5.8")
    assert value_after(triton.argv, "--attention-backend") == "triton"


def test_multi_node_flags() -> None:
    worker = build_command(config(tp_size=16, nnodes=2, node_rank=1, dist_init_addr="10.0.0.1:25000"), PYTHON, "0.5.8")
    assert value_after(worker.argv, "--nnodes") == "2"
    assert value_after(worker.argv, "--node-rank") == "1"
    assert value_after(worker.argv, "--dist-init-addr") == "10.0.0.1:25000"
    with pytest.raises(ValidationError, match="dist_init_addr"):
        config(nnodes=2)
    with pytest.raises(ValidationError, match="node_rank"):
        config(nnodes=2, node_rank=2, dist_init_addr="10.0.0.1:25000")


def test_extra_flags_and_environment_are_passed_through() -> None:
    command = build_command(
        config(extra_flags=["--watchdog-timeout", "900"], env={"NCCL_P2P_DISABLE": "1"}), PYTHON, "0.5.8"
    )
    assert command.argv[-2:] == ["--watchdog-timeout", "900"]
    assert command.env["NCCL_P2P_DISABLE"] == "1"


def test_vllm_0_33_serve_command() -> None:
    vllm = EngineLaunchConfig(
        engine="vllm",
        model_path="/models/Kimi-K2.5",
        tp_size=8,
        mem_fraction=0.9,
        attention_backend="triton",
        cuda_graph_max_bs=16,
        context_length=65536,
        speculative={"draft_model_path": "/models/kimi-eagle3-mla", "num_steps": 3},
    )
    command = build_command(vllm, PYTHON, "0.33.0")
    argv = command.argv
    assert argv[:3] == ["/envs/engine/bin/vllm", "serve", "/models/Kimi-K2.5"]
    assert value_after(argv, "--port") == "8000"
    assert value_after(argv, "--gpu-memory-utilization") == "0.9"
    assert value_after(argv, "--max-model-len") == "65536"
    assert value_after(argv, "--attention-backend") == "TRITON_MLA"  # Kimi is an MLA model
    assert value_after(argv, "--max-cudagraph-capture-size") == "16"
    assert json.loads(value_after(argv, "--speculative-config")) == {
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "model": "/models/kimi-eagle3-mla",
    }


def test_vllm_older_releases() -> None:
    vllm = EngineLaunchConfig(
        engine="vllm",
        model_path="/m",
        attention_backend="flashinfer",
        cuda_graph_max_bs=16,
        speculative={"draft_model_path": "/d", "num_steps": 2, "algorithm": "EAGLE"},
    )
    mid = build_command(vllm, PYTHON, "0.8.5")
    assert mid.env["VLLM_ATTENTION_BACKEND"] == "FLASHINFER" and "--attention-backend" not in mid.argv
    assert json.loads(value_after(mid.argv, "--compilation-config")) == {"cudagraph_capture_sizes": [1, 2, 4, 8, 16]}
    old = build_command(vllm, PYTHON, "0.7.3")
    assert old.argv[:3] == ["/envs/engine/bin/vllm", "serve", "/m"]  # the console script exists in 0.7.3
    assert value_after(old.argv, "--speculative-model") == "/d"
    assert value_after(old.argv, "--num-speculative-tokens") == "2"


def test_vllm_multi_node_worker_is_headless() -> None:
    vllm = EngineLaunchConfig(
        engine="vllm", model_path="/m", tp_size=8, nnodes=2, node_rank=1, dist_init_addr="10.0.0.1:29500"
    )
    argv = build_command(vllm, PYTHON, "0.33.0").argv
    assert value_after(argv, "--master-addr") == "10.0.0.1" and value_after(argv, "--master-port") == "29500"
    assert "--headless" in argv


def test_remedy_actions_name_real_config_fields() -> None:
    fields = set(EngineLaunchConfig.model_fields)
    nested = {
        f"speculative.{name}"
        for name in EngineLaunchConfig.model_fields["speculative"].annotation.__args__[0].model_fields
    }  # type: ignore[union-attr]
    for remedy_id, remedy in load_library().remedies.items():
        action = remedy.action
        for key in [*action.set_flag, *action.adjust_flag, *action.scale_flag, *action.unset_flag]:
            assert key in fields | nested, (remedy_id, key)
