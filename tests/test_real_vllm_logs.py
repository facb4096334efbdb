"""`agent diagnose` on logs of a real vLLM (CPU build), kept in tests/data/real_vllm/ with their true class.

The logs were provoked by ``scripts/capture-real-vllm-logs`` (the index names the exact command of
each). Cases that today's diagnosis gets wrong are strict xfails naming the issue-12 item that fixes
them, so the fix turns them into passes and strictness then asks for the marker to go.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest
from support.cli import run_agent

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
# case id -> why today's `agent diagnose` is wrong on it, and which item of issue 12 fixes it
ITEM5 = "issue 12 item 5 (real lifecycle facts): "
ITEM6 = "issue 12 item 6 (real failures diagnosed from the real log): "
KNOWN_WRONG: dict[str, str] = {
    "worker-sigkill-after-ready": ITEM5 + "'Worker proc VllmWorker-0 died unexpectedly' and EngineDeadError after "
    "the ready line are reported healthy (the API server exits 0)",
    "engine-core-sigkill-after-ready": ITEM5 + "'engine core exited unexpectedly' and EngineDeadError after the "
    "ready line are reported healthy",
    "api-server-sigkill-after-ready": ITEM5 + "the log just stops after ready; only the exit status (-9) tells, and "
    "`agent diagnose` has no way to take it",
    "kv-cache-larger-than-ram": ITEM6 + "the CPU KV-cache check ('less than requested memory for kv') matches no "
    "signature",
    "cpu-memory-utilization-too-high": ITEM6 + "the CPU memory check ('less than desired CPU memory utilization') "
    "matches no signature",
    "model-dir-missing": ITEM6 + "vLLM 0.32's words for a missing model directory ('HFValidationError: Repo id must "
    "be in the form') match no signature",
    "model-path-is-file": ITEM6 + "'Invalid repository ID or local directory specified' matches no signature",
    "quantization-not-in-checkpoint": ITEM6 + "'Cannot find the config file for awq' matches no signature",
    "drafter-hidden-size-mismatch": ITEM6 + "a drafter whose weights do not fit ('Tried to load weights of size') "
    "is only a generic engine-core failure",
    "tokenizer-missing": ITEM6 + "'Couldn't instantiate the backend tokenizer' matches no signature",
}


def test_index_covers_the_required_cases_with_real_logs() -> None:
    identifiers = [case["id"] for case in CASES]
    assert len(identifiers) == len(set(identifiers)) >= 20
    assert set(identifiers) >= REQUIRED
    assert set(KNOWN_WRONG) <= set(identifiers)
    for case in CASES:
        assert case["expected_class"] in get_args(DiagnosisClass), case["id"]
        log = (DATA / case["file"]).read_text(encoding="utf-8")
        assert case["key_line"] and case["key_line"] in log.splitlines(), case["id"]
        assert "vLLM" in log or "vllm" in log, case["id"]


def _cases() -> list[Any]:
    return [
        pytest.param(
            case,
            id=case["id"],
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[case["id"]])] if case["id"] in KNOWN_WRONG else [],
        )
        for case in CASES
    ]


@pytest.mark.parametrize("case", _cases())
def test_agent_diagnose_gives_the_true_class(case: dict[str, Any]) -> None:
    completed = run_agent("diagnose", "--json", DATA / case["file"])
    assert completed.returncode == 0, completed.stderr
    diagnosis = json.loads(completed.stdout)
    assert diagnosis["class"] == case["expected_class"], diagnosis
