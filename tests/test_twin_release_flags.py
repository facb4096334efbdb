"""The twin's engine stand-in accepts exactly what the release it pretends to be accepts (release data)."""

from __future__ import annotations

import pytest

from twin.engine.flags import help_text, parse_flags, pretended_flags


def test_the_old_graph_cap_is_accepted_through_0_5_19_and_rejected_from_0_5_20(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--model-path", "/m", "--cuda-graph-max-bs", "64"]
    assert parse_flags("sglang", argv, "0.5.19").values["--cuda-graph-max-bs"] == 64
    with pytest.raises(SystemExit) as rejected:
        parse_flags("sglang", argv, "0.5.20")
    assert rejected.value.code == 2
    assert "--cuda-graph-max-bs" in capsys.readouterr().err
    decode = parse_flags("sglang", ["--model-path", "/m", "--cuda-graph-max-bs-decode", "64"], "0.5.20")
    assert decode.values["--cuda-graph-max-bs-decode"] == 64


def test_vllm_attention_backend_flag_only_from_0_13_0() -> None:
    argv = ["/m", "--attention-backend", "TRITON_MLA"]
    assert parse_flags("vllm", argv, "0.13.0").values["--attention-backend"] == "TRITON_MLA"
    with pytest.raises(SystemExit):
        parse_flags("vllm", argv, "0.12.0")


def test_abbreviations_resolve_as_in_the_release() -> None:
    assert parse_flags("sglang", ["--model-path", "/m", "--tp", "4"], "0.5.8").values["--tp-size"] == 4
    with pytest.raises(SystemExit):  # ambiguous: --cuda-graph-max-bs-decode / -prefill
        parse_flags("sglang", ["--model-path", "/m", "--cuda-graph-max-bs", "8"], "0.5.23")


def test_unknown_versions_pretend_to_be_the_closest_older_release_read() -> None:
    assert pretended_flags("sglang", "0.5.21.post1").version == "0.5.21"
    assert pretended_flags("sglang", "0.0.0.dev0").version == "0.5.23"  # a dev build answers like the newest
    assert "--cuda-graph-max-bs-decode" in help_text("sglang", "0.5.20")
