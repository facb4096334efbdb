"""`agent diagnose` on logs of a real vLLM (CPU build), kept in tests/data/real_vllm/ with their true class.

The logs were provoked by ``scripts/capture-real-vllm-logs`` (the index names the exact command of
each, and a note where a label changed with the vocabulary).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest
from support.cli import run_agent
from support.real_vllm_index import read_index, write_index

from tools.logs.library import DiagnosisClass

DATA = Path(__file__).parent / "data" / "real_vllm"
CASES: list[dict[str, Any]] = tomllib.loads((DATA / "index.toml").read_text(encoding="utf-8"))["cases"]
REQUIRED = {
    "port-in-use",
    "model-dir-missing",
    "max-model-len-too-large",
    "kv-cache-larger-than-ram",
    "worker-sigkill-after-ready",
    "healthy-start",
    "ngram-healthy",
    "eagle3-ready",
}


def test_index_covers_the_required_cases_with_real_logs() -> None:
    identifiers = [case["id"] for case in CASES]
    assert len(identifiers) == len(set(identifiers)) >= 20
    assert set(identifiers) >= REQUIRED
    for case in CASES:
        assert case["expected_class"] in get_args(DiagnosisClass), case["id"]
        log = (DATA / case["file"]).read_text(encoding="utf-8")
        assert case["key_line"] and case["key_line"] in log.splitlines(), case["id"]
        assert "vLLM" in log or "vllm" in log, case["id"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_agent_diagnose_gives_the_true_class(case: dict[str, Any]) -> None:
    """The exit code the capture measured goes in as ``--exit-code``, as engine_status passes it."""
    exit_code = ["--exit-code", str(case["exit_code"])] if case.get("exit_code") is not None else []
    completed = run_agent("diagnose", "--json", *exit_code, DATA / case["file"])
    assert completed.returncode == 0, completed.stderr
    diagnosis = json.loads(completed.stdout)
    assert diagnosis["class"] == case["expected_class"], diagnosis


BLIND = Path(__file__).parent / "data" / "real_vllm_blind"
BLIND_CASES: list[dict[str, Any]] = tomllib.loads((BLIND / "index.toml").read_text(encoding="utf-8"))["cases"]


def test_the_blind_real_vllm_cases_are_new_real_logs_with_their_first_measurement() -> None:
    """Blind sets 17, 19, 20, 22, 24, 26, 28 and 30: provoked by people who had not seen the diagnosis; each measured
    once before rules were written from it (16 of 21, 16 of 20, 19 of 22, 28 of 32, 16 of 23, 23 of 29, 26 of 33,
    then 25 of the 27 cases of set 30 kept). The current figure is checked with the corpus
    (tests/test_diagnosis_corpus.py)."""
    identifiers = {case["id"] for case in BLIND_CASES}
    assert len(identifiers) == len(BLIND_CASES) == 207
    assert not identifiers & {case["id"] for case in CASES}
    for case in BLIND_CASES:
        assert case["expected_class"] in get_args(DiagnosisClass), case["id"]
        assert case["first_class"] in get_args(DiagnosisClass), case["id"]
        log = (BLIND / case["file"]).read_text(encoding="utf-8")
        assert case["key_line"] and case["key_line"] in log.splitlines(), case["id"]
    first_measurements = [("17", 21, 16), ("19", 20, 16), ("20", 22, 19), ("22", 32, 28)]
    first_measurements += [("24", 23, 16), ("26", 29, 23), ("28", 33, 26), ("30", 27, 25)]
    for blind_set, count, right in first_measurements:
        cases = [case for case in BLIND_CASES if case["blind_set"] == blind_set]
        assert len(cases) == count
        assert sum(case["first_class"] == case["expected_class"] for case in cases) == right


def test_rewriting_an_index_keeps_what_its_header_says_about_the_set(tmp_path: Path) -> None:
    """The capture tool rewrites an index after a capture: the blind sets' own header lines and every measured field
    (first measurements included) survive it."""
    copy = tmp_path / "index.toml"
    copy.write_text((BLIND / "index.toml").read_text(encoding="utf-8"), encoding="utf-8")
    write_index(read_index(copy), copy, "0.32.0")
    assert copy.read_text(encoding="utf-8") == (BLIND / "index.toml").read_text(encoding="utf-8")
    assert "# Blind set 19:" in copy.read_text(encoding="utf-8") and "# Blind set 20:" in copy.read_text(
        encoding="utf-8"
    )
