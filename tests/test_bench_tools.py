"""run_bench and check_correctness through the registry: state records, probes, the sglang backend."""

from __future__ import annotations

import json
import math
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.bench import fake_server
from support.tool_context import make_context

from tools.base import ToolContext, ToolRegistry, ToolResult
from tools.bench import sglang_backend
from tools.bench.correctness import PROBES, judge, repetition_problem
from tools.bench.runner import BenchParams
from tools.bench.tools import CheckCorrectnessTool, RunBenchTool
from tools.records import ProcessRecord


def call(context: ToolContext, name: str, arguments: dict[str, object]) -> ToolResult:
    return ToolRegistry([RunBenchTool(), CheckCorrectnessTool()]).execute(name, arguments, context)


def engine_record(port: int) -> ProcessRecord:
    return ProcessRecord(
        name="sglang-main",
        pid=1,
        create_time=0.0,
        argv=["sglang", "serve"],
        log_path="x.log",
        port=port,
        kind="engine",
        state="ready",
        config={"tp_size": 8, "attention_backend": "triton"},
    )


def test_run_bench_stores_a_sweep_with_the_engine_config(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    with fake_server("--flavor", "vllm", "--itl-ms", "1") as url:
        context.state.processes.append(engine_record(int(url.rsplit(":", 1)[1])))
        result = call(
            context,
            "run_bench",
            {
                "base_url": url,
                "model": "fake-model",
                "concurrency": [1, 4],
                "num_prompts": 8,
                "input_len": 16,
                "output_len": 8,
            },
        )
    assert result.ok, result.error
    assert result.output is not None
    assert result.output["benchmark_id"] == "bench1" and result.output["warnings"] == []
    assert [level["concurrency"] for level in result.output["levels"]] == [1, 4]
    assert result.output["levels"][0]["spec"]["accept_length"] == pytest.approx(2.5)
    record = context.state.benchmarks[0]
    assert record.engine_config["tp_size"] == 8 and record.engine_config["engine_process"] == "sglang-main"
    assert record.metrics["correctness"]["passed"] is True
    assert [level["completed"] for level in record.metrics["levels"]] == [8, 8]
    assert "passed 5/5" in context.state.findings[0].summary


def test_run_bench_flags_a_fast_but_garbled_configuration(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    with fake_server("--mode", "garbled") as url:
        result = call(context, "run_bench", {"base_url": url, "model": "m", "num_prompts": 4, "output_len": 8})
    assert result.ok and result.output is not None
    assert any("FAILED" in warning for warning in result.output["warnings"])
    assert context.state.benchmarks[0].metrics["correctness"]["passed"] is False
    assert "does not count" in context.state.findings[-1].summary


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("model", None),
        ("wrong", "expected '42'"),
        ("empty", "empty answer"),
        ("garbled", "makes up"),
    ],
)
def test_check_correctness_verdicts(tmp_path: Path, mode: str, problem: str | None) -> None:
    context = make_context(tmp_path)
    with fake_server("--mode", mode) as url:
        result = call(context, "check_correctness", {"base_url": url, "model": "m", "max_tokens": 64})
    assert result.ok and result.output is not None
    verdict = result.output["verdict"]
    assert verdict["passed"] is (problem is None)
    if problem is not None:
        assert any(problem in item for item in verdict["results"][0]["problems"]), verdict["results"][0]
        assert context.state.findings[-1].evidence


def test_sanity_checks_on_answers() -> None:
    counting = next(probe for probe in PROBES if probe.name == "counting")
    assert judge(counting, "1, 2, 3, 4, 5").passed
    assert not judge(counting, "5, 4, 3, 2, 1").passed
    assert repetition_problem("the answer is " + "to be or not " * 8) is not None
    assert repetition_problem("!" * 40) is not None
    assert repetition_problem("The capital of France is Paris, a city on the Seine.") is None
    garbled = judge(PROBES[0], "42 \ufffd\ufffd\ufffd\ufffd")
    assert any("unprintable" in problem for problem in garbled.problems)


def test_the_sweep_time_limit_stops_the_load(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    with fake_server("--itl-ms", "50") as url:
        started = time.monotonic()
        result = call(
            context,
            "run_bench",
            {
                "base_url": url,
                "model": "m",
                "num_prompts": 4,
                "output_len": 4000,
                "correctness_probe": False,
                "timeout_seconds": 1.0,
            },
        )
        elapsed = time.monotonic() - started
    assert not result.ok and "did not finish within 1 s" in (result.error or "")
    assert elapsed < 60.0  # 4 requests of 200 s each were cut off, not waited for
    assert context.state.benchmarks == []


def test_bad_arguments_and_unreachable_servers_are_errors(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    bad = call(context, "run_bench", {"base_url": "http://127.0.0.1:1", "model": "m", "concurrency": [0]})
    assert not bad.ok and "concurrency" in (bad.error or "")
    nowhere = call(context, "check_correctness", {"base_url": "http://127.0.0.1:1", "model": "m"})
    assert not nowhere.ok and "did not answer the correctness probe" in (nowhere.error or "")
    assert "cannot connect" in (nowhere.error or "")


REALISTIC_LINE = {
    "tag": None,
    "backend": "sglang-oai-chat",
    "dataset_name": "random-ids",
    "request_rate": math.inf,
    "max_concurrency": 8,
    "sharegpt_output_len": None,
    "random_input_len": 1000,
    "random_output_len": 1000,
    "random_range_ratio": 1.0,
    "server_info": {"version": "0.5.8", "internal_states": []},
    "duration": 95.41,
    "completed": 78,
    "total_input_tokens": 78000,
    "total_input_text_tokens": 78000,
    "total_input_vision_tokens": 0,
    "total_output_tokens": 78000,
    "total_output_tokens_retokenized": 77912,
    "request_throughput": 0.8175,
    "input_throughput": 817.5,
    "output_throughput": 817.5,
    "total_throughput": 1635.0,
    "mean_e2e_latency_ms": 9521.3,
    "median_e2e_latency_ms": 9518.2,
    "std_e2e_latency_ms": 40.1,
    "p90_e2e_latency_ms": 9570.2,
    "p99_e2e_latency_ms": 9601.4,
    "mean_ttft_ms": 180.4,
    "median_ttft_ms": 175.2,
    "std_ttft_ms": 30.2,
    "p99_ttft_ms": 260.1,
    "mean_tpot_ms": 9.35,
    "median_tpot_ms": 9.34,
    "std_tpot_ms": 0.1,
    "p99_tpot_ms": 9.6,
    "mean_itl_ms": 9.35,
    "median_itl_ms": 9.1,
    "std_itl_ms": 2.0,
    "p95_itl_ms": 11.2,
    "p99_itl_ms": 15.3,
    "concurrency": 7.98,
    "accept_length": 2.91,
    "max_output_tokens_per_s": 900.0,
    "max_concurrent_requests": 8,
}


def test_parse_a_realistic_bench_serving_line() -> None:
    text = "\n".join([json.dumps({**REALISTIC_LINE, "max_concurrency": 1}), json.dumps(REALISTIC_LINE), ""])
    assert "Infinity" in text  # what json.dumps writes for request_rate inf
    level = sglang_backend.parse_record(sglang_backend.last_record(text), num_requests=80)
    assert (level.concurrency, level.request_rate, level.completed, level.failed) == (8, None, 78, 2)
    assert level.output_throughput == 817.5 and level.input_tokens == 78000
    assert (level.ttft_ms.median, level.ttft_ms.p90, level.ttft_ms.p99) == (175.2, None, 260.1)
    assert (level.e2e_ms.p90, level.itl_ms.median, level.tpot_ms.mean) == (9570.2, 9.1, 9.35)
    assert level.spec is not None and level.spec.accept_length == 2.91 and not level.spec.per_run
    with pytest.raises(sglang_backend.BenchOutputError):
        sglang_backend.last_record("not json\n")


def test_bench_serving_command_is_offline_safe() -> None:
    params = BenchParams(
        base_url="http://10.0.0.2:30000/",
        model="kimi",
        concurrency=[1, 64],
        input_len=1000,
        output_len=500,
        ignore_eos=False,
        extra_body={"chat_template_kwargs": {"thinking": False}},
    )
    argv = sglang_backend.build_command("/env/bin/python", params, 64, Path("/out/b.jsonl"), "/models/kimi")
    assert argv[:3] == ["/env/bin/python", "-m", "sglang.bench_serving"]
    flags = dict(zip(argv[3::2], argv[4::2], strict=False))
    assert flags["--dataset-name"] == "random-ids" and flags["--tokenizer"] == "/models/kimi"
    assert flags["--base-url"] == "http://10.0.0.2:30000" and flags["--backend"] == "sglang-oai-chat"
    load = (flags["--max-concurrency"], flags["--num-prompts"], flags["--request-rate"])
    assert load == ("64", "320", "inf")
    assert "--disable-ignore-eos" in argv
    assert '"thinking": false' in argv[argv.index("--extra-request-body") + 1]


FAKE_BENCH_SERVING = """
import argparse, json, os, sys
parser = argparse.ArgumentParser()
for flag in ("--backend", "--base-url", "--model", "--dataset-name", "--random-input-len",
             "--random-output-len", "--random-range-ratio", "--num-prompts", "--max-concurrency",
             "--request-rate", "--seed", "--warmup-requests", "--output-file", "--tokenizer"):
    parser.add_argument(flag)
parser.add_argument("--disable-tqdm", action="store_true")
args = parser.parse_args()
if os.environ.get("HF_HUB_OFFLINE") != "1" or args.dataset_name != "random-ids":
    sys.exit("OSError: We couldn't connect to 'https://huggingface.co'")
line = dict(LINE, max_concurrency=int(args.max_concurrency), completed=int(args.num_prompts))
with open(args.output_file, "a") as handle:
    handle.write(json.dumps(line) + "\\n")
"""


def test_sglang_backend_runs_bench_serving_in_the_engine_environment(tmp_path: Path) -> None:
    packages = tmp_path / "engine_packages" / "sglang"
    packages.mkdir(parents=True)
    (packages / "__init__.py").write_text("")
    (packages / "bench_serving.py").write_text(
        f"LINE = {json.dumps(REALISTIC_LINE)!r}\nimport json\nLINE = json.loads(LINE)\n" + FAKE_BENCH_SERVING
    )
    python = tmp_path / "engine_python"
    python.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        PYTHONPATH={packages.parent} exec {sys.executable} "$@"
        """)
    )
    python.chmod(0o755)
    context = make_context(tmp_path)
    context.settings.engine_python = str(python)
    result = call(
        context,
        "run_bench",
        {
            "base_url": "http://127.0.0.1:30000",
            "model": "kimi",
            "backend": "sglang",
            "concurrency": [1, 8],
            "num_prompts": 20,
            "correctness_probe": False,
        },
    )
    assert result.ok, result.error
    assert result.output is not None and result.output["client"] == "sglang.bench_serving"
    levels = context.state.benchmarks[0].metrics["levels"]
    assert [(level["concurrency"], level["completed"]) for level in levels] == [(1, 20), (8, 20)]
    context.settings.engine_python = sys.executable
    missing = call(
        context,
        "run_bench",
        {"base_url": "http://127.0.0.1:30000", "model": "kimi", "backend": "sglang", "correctness_probe": False},
    )
    assert not missing.ok and "has no sglang" in (missing.error or "")
