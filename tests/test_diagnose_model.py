"""The learned part of diagnosis: its features, the model, how it combines with the rules, and that the
committed model is what the corpus trains.

Models here are trained for the test from labelled feature lists (real models, real counts); the
committed one is checked by running the training script as a person would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import agent_environment, run_agent

from tools.logs.calibration import Band, Calibration
from tools.logs.combine import combine
from tools.logs.concepts import concepts
from tools.logs.decide import Decision
from tools.logs.diagnose import DiagnosisHints, diagnose_text
from tools.logs.learned import Example, LearnedModel, load_model, render, train
from tools.logs.library import load_library
from tools.logs.wording import words

REPO_ROOT = Path(__file__).resolve().parents[1]
LOGS = REPO_ROOT / "tests" / "data" / "logs"
UNEXPLAINED = (
    "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model /models/x...\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/vllm/vllm/platforms/cuda.py", line 500, in check_things\n'
    "ValueError: Total number of widgets (52) needs to be divisible by the frobnication size (8).\n"
)


def test_wording_is_normalised_so_new_wording_shares_words_with_old() -> None:
    assert words("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture") == [
        "cannot",
        "call",
        "cuda",
        "generator",
        "impl",
        "current",
        "seed",
        "dur",
        "cuda",
        "graph",
        "captur",
    ]
    assert words("capturing captured capture") == ["captur"] * 3
    # numbers, addresses, model folders and sizes say nothing about the failure; file names do
    assert words("at 0x7f3a2c /models/Qwen3-30B-A3B-Instruct/tokenizer.json 4.93 GB") == ["tokenizer", "json", "gb"]
    assert words("not supported") == ["not", "support"]  # negations stay


def test_word_families_name_what_a_message_is_about() -> None:
    assert {"arguments", "collective"} <= concepts(words("must be divisible by tensor parallel size of the rank"))
    assert "memory" in concepts(words("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert "socket_address" in concepts(words("OSError: [Errno 98] address already in use"))


def examples() -> list[Example]:
    return [
        Example(["t:divisibl", "m:arguments", "x:ValueError"], "config_error", "thread-1"),
        Example(["t:invalid", "t:choic", "m:arguments"], "config_error", "thread-2"),
        Example(["t:allocat", "m:memory", "x:OutOfMemoryError"], "cuda_oom", "thread-3"),
        Example(["t:kv", "m:memory", "x:ValueError"], "cuda_oom", "thread-4"),
    ]


def test_the_model_favours_the_class_whose_features_a_log_shares() -> None:
    model = train(examples())
    scores = model.posterior(["m:arguments", "t:divisibl", "t:never_seen"])
    assert scores[0].diagnosis_class == "config_error" and scores[0].probability > scores[1].probability
    assert "m:arguments" in scores[0].support or "t:divisibl" in scores[0].support
    assert sum(score.probability for score in model.posterior(["m:memory"], top=10)) > 0.99
    assert LearnedModel().posterior(["m:memory"]) == []  # an empty model has no opinion


def test_the_model_file_is_deterministic_and_round_trips() -> None:
    first, second = render(train(examples())), render(train(list(reversed(examples()))))
    assert first == second
    again = LearnedModel.model_validate_json(first)
    assert again.posterior(["m:memory"]) == train(examples()).posterior(["m:memory"])


def test_a_model_less_some_examples_is_the_model_trained_without_them() -> None:
    everything = train(examples())
    for left_out in ([examples()[0]], [examples()[2], examples()[3]], [examples()[1], examples()[3]]):
        rest = [example for example in examples() if example not in left_out]
        less, retrained = everything.without(left_out), train(rest)
        # A class or a feature no example is left with is gone, as from a recount.
        assert (less.class_counts, less.features) == (retrained.class_counts, retrained.features)
        assert list(less.features) == list(retrained.features)
        for features in (["m:memory"], ["m:arguments", "t:kv"], ["x:ValueError", "t:choic"]):
            assert less.posterior(features, top=10) == retrained.posterior(features, top=10)
    assert "cuda_oom" not in everything.without([examples()[2], examples()[3]]).class_counts


def unexplained_decision() -> Decision:
    return Decision("unknown", 0.35, 0.27, 3, "An error was logged.", "an error that no rule explains", [])


def test_the_model_decides_only_where_the_rules_name_no_cause() -> None:
    model, library = train(examples()), load_library()
    scores = model.posterior(["m:arguments", "t:divisibl"])
    sure = Calibration(model_bands=[Band(low=0.0, high=1.0, count=18, correct=16)])
    decided = combine(unexplained_decision(), scores, sure, [1, 2, 3, 4], library)
    assert decided.diagnosis_class == "config_error" and decided.decided_by == "model"
    assert decided.confidence == 0.85 and "learned model" in decided.why
    assert decided.remedies == list(library.class_remedies["config_error"])
    named = Decision("cuda_oom", 0.7, 0.9, 3, "Out of memory.", "a signature matched", ["raise_mem_fraction"])
    kept = combine(named, scores, sure, [1, 2, 3, 4], library)
    assert kept.diagnosis_class == "cuda_oom" and kept.decided_by == "rules"
    assert [alternative.diagnosis_class for alternative in kept.alternatives] == ["config_error"]


def test_a_model_decision_below_the_threshold_stays_unknown_with_the_likeliest_classes() -> None:
    model, library = train(examples()), load_library()
    doubtful = Calibration(model_bands=[Band(low=0.0, high=1.0, count=18, correct=5)])
    decision = combine(unexplained_decision(), model.posterior(["m:arguments"]), doubtful, [1, 2, 3, 4], library)
    assert decision.diagnosis_class == "unknown" and decision.confidence < doubtful.threshold
    assert decision.alternatives[0].diagnosis_class == "config_error"
    assert all(alternative.why for alternative in decision.alternatives)


def test_the_model_never_turns_a_healthy_or_loading_log_into_a_failure() -> None:
    everything_is_oom = train([Example(["e:sglang", "e:vllm", "p:ready", "p:weights"], "cuda_oom", "thread")])
    for name, expected in (("sglang-healthy.log", "healthy"), ("vllm-loading.log", "loading")):
        assert diagnose_text((LOGS / name).read_text(), model=everything_is_oom).diagnosis_class == expected


def test_an_exit_without_error_text_is_left_to_the_rules() -> None:
    loading = (LOGS / "sglang-loading.log").read_text()
    model = train([Example(["l:exited", "l:exit_code", "l:no_traceback", "p:weights"], "process_killed", "x")])
    diagnosis = diagnose_text(loading, DiagnosisHints(exit_code=1), model=model)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.decided_by == "rules"


def test_the_committed_model_names_causes_in_wording_no_rule_knows() -> None:
    capture = UNEXPLAINED.replace(
        "ValueError: Total number of widgets (52) needs to be divisible by the frobnication size (8).",
        "RuntimeError: Cannot call FooBarImpl::baz in CUDA graph capture mode",
    )
    for text, expected in ((UNEXPLAINED, "config_error"), (capture, "cuda_graph_capture_failure")):
        assert diagnose_text(text, model=LearnedModel()).diagnosis_class == "unknown"  # no rule knows it
        diagnosis = diagnose_text(text)
        assert (diagnosis.diagnosis_class, diagnosis.decided_by) == (expected, "model"), diagnosis.why
        assert diagnosis.confidence >= 0.5 and "learned model" in diagnosis.summary
    assert load_model().class_counts and load_model().trained_on


def test_diagnose_json_says_who_decided_and_keeps_its_fields(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text(UNEXPLAINED)
    result = run_agent("diagnose", log, "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert {"class", "confidence", "line_number", "key_line", "remedies", "engine", "root_cause", "phase"} <= set(
        payload
    )
    assert payload["decided_by"] in ("rules", "model")
    assert all({"class", "confidence", "why"} <= set(alternative) for alternative in payload["alternatives"])


@pytest.mark.timeout(960)  # retraining on the whole corpus: minutes on a loaded 2-core host
def test_the_committed_model_and_its_bands_are_what_the_corpus_trains() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.diagnosis_model", "--check"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=agent_environment(),
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
