"""The run_bench, check_correctness and check_lossless tools."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.bench import sglang_backend
from tools.bench.correctness import PROBES, CorrectnessVerdict, ProbeUnanswered, run_probes
from tools.bench.lossless import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_PREFIX_FRACTION,
    PROMPTS,
    LosslessRequestFailed,
    LosslessVerdict,
    compare,
    greedy_outputs,
)
from tools.bench.prompts import EndpointKind
from tools.bench.record import record_benchmark, record_correctness
from tools.bench.runner import BenchParams, BenchRun, LevelReport, run_sweep
from tools.bench.stats import Distribution


class RunBenchArgs(BenchParams):
    backend: Literal["opsloop", "sglang"] = Field(
        default="opsloop", description="'sglang' runs sglang.bench_serving in the engine environment instead"
    )
    label: str = Field(default="", description="Short name for this run in the state (default: derived)")
    correctness_probe: bool = Field(default=True, description="Check answers are sane before the load")
    tokenizer: str | None = Field(default=None, description="Local tokenizer dir for the sglang backend")
    timeout_seconds: float = Field(default=3600.0, gt=0, le=6 * 3600, description="Limit for the whole sweep")
    host: str | None = Field(
        default=None,
        description="base_url is as seen on this host (e.g. http://127.0.0.1:30000 on a GPU server reached over "
        "SSH); the load still comes from the agent's machine, through a port forwarded to that host",
    )


class LevelSummary(BaseModel):
    """The figures of one level a policy compares, rounded; the full record is in state.benchmarks."""

    concurrency: int
    completed: int
    failed: int
    req_per_s: float
    output_tok_per_s: float
    total_tok_per_s: float
    ttft_ms: dict[str, float | None]
    itl_ms: dict[str, float | None]
    tpot_ms: dict[str, float | None]
    e2e_ms: dict[str, float | None]
    spec: dict[str, Any] | None = None  # speculative acceptance read from the server's metrics
    errors: list[str] = Field(default_factory=list)  # "COUNTx MESSAGE"

    @classmethod
    def of(cls, level: LevelReport) -> LevelSummary:
        def ms(distribution: Distribution) -> dict[str, float | None]:
            return {
                key: None if value is None else round(value, 2)
                for key, value in distribution.model_dump(exclude={"count"}).items()
            }

        return cls(
            concurrency=level.concurrency,
            completed=level.completed,
            failed=level.failed,
            req_per_s=round(level.request_throughput, 3),
            output_tok_per_s=round(level.output_throughput, 1),
            total_tok_per_s=round(level.total_throughput, 1),
            ttft_ms=ms(level.ttft_ms),
            itl_ms=ms(level.itl_ms),
            tpot_ms=ms(level.tpot_ms),
            e2e_ms=ms(level.e2e_ms),
            spec=level.spec.model_dump(exclude_none=True) if level.spec is not None else None,
            errors=[f"{error.count}x {error.message}" for error in level.errors],
        )


class RunBenchOutput(ToolOutput):
    benchmark_id: str
    client: str
    measured_from: str = Field(default="", description="Where the load generator ran and what it reached")
    levels: list[LevelSummary]
    correctness: str | None = None
    warnings: list[str] = Field(default_factory=list)


def _run_sglang(args: RunBenchArgs, context: ToolContext) -> BenchRun:
    python = context.settings.engine_python
    probe = context.host.run([python, "-c", sglang_backend.HAS_SGLANG], timeout=60)
    if probe.exit_code != 0:
        raise ToolError(f"the engine environment ({python}) has no sglang; use backend 'opsloop'")
    tokenizer = args.tokenizer or context.state.model.path
    output_file = context.outputs_dir / f"bench_serving-step{context.state.step:05d}-{int(time.time())}.jsonl"
    levels = []
    deadline = time.monotonic() + args.timeout_seconds
    for concurrency in args.concurrency:
        argv = sglang_backend.build_command(python, args, concurrency, output_file, tokenizer)
        context.progress(f"sglang.bench_serving at concurrency {concurrency}")
        result = context.host.run(
            context.host.translate(argv),
            timeout=max(deadline - time.monotonic(), 1.0),
            env=dict(sglang_backend.OFFLINE_ENV),
            cwd=context.outputs_dir,
        )
        if result.timed_out or result.exit_code != 0:
            tail = (result.stderr or result.stdout)[-1500:]
            why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            raise ToolError(f"sglang.bench_serving {why} at concurrency {concurrency}:\n{tail}")
        try:
            record = sglang_backend.last_record(output_file.read_text(encoding="utf-8"))
        except (OSError, sglang_backend.BenchOutputError) as error:
            raise ToolError(f"cannot read the bench_serving result: {error}") from None
        levels.append(sglang_backend.parse_record(record, args.requests_for(concurrency)))
    params = BenchParams(**args.model_dump(include=set(BenchParams.model_fields)))
    return BenchRun(client="sglang.bench_serving", params=params, levels=levels)


class RunBenchTool(Tool[RunBenchArgs, RunBenchOutput]):
    name = "run_bench"
    blocks = "until the sweep ends, at most timeout_s seconds (default 3600, up to 21600) plus 120 s."
    description = (
        "Benchmark an OpenAI-compatible server with synthetic prompts: a sweep over concurrency "
        "levels (or a Poisson request rate), reporting req/s, output and total tok/s, TTFT, ITL, "
        "TPOT, E2E (mean/median/p90/p99), errors, and speculative acceptance from the server's "
        "metrics. Runs a correctness probe first. The result is stored in state.benchmarks with "
        "the engine config."
    )
    args_model = RunBenchArgs
    output_model = RunBenchOutput

    def timeout_for(self, args: RunBenchArgs) -> float:
        return args.timeout_seconds + 120.0

    def run(self, args: RunBenchArgs, context: ToolContext) -> RunBenchOutput:
        args, measured_from = _from_agent(args, context)
        verdict: CorrectnessVerdict | None = None
        if args.correctness_probe:
            context.progress("correctness probe")
            verdict = _probe(
                args.base_url,
                args.model,
                args.endpoint,
                args.extra_body,
                256,
                timeout=min(args.timeout_seconds, args.request_timeout_seconds * len(PROBES)),
                request_timeout=args.request_timeout_seconds,
            )
            record_correctness(context.state, verdict, args.base_url)
        if args.backend == "sglang":
            run = _run_sglang(args, context)
        else:
            context.progress(f"benchmark sweep over concurrency {args.concurrency}")
            params = BenchParams(**args.model_dump(include=set(BenchParams.model_fields)))
            try:
                run = asyncio.run(asyncio.wait_for(run_sweep(params), args.timeout_seconds))
            except TimeoutError:
                raise ToolError(
                    f"the sweep did not finish within {args.timeout_seconds:.0f} s; lower num_prompts "
                    "or output_len, or raise timeout_seconds"
                ) from None
        record = record_benchmark(context.state, run, label=args.label, correctness=verdict)
        context.checkpoint()
        warnings = []
        if verdict is not None and not verdict.passed:
            warnings.append(f"{verdict.summary}: these numbers come from a configuration with wrong output")
        for level in run.levels:
            if level.completed == 0:
                warnings.append(f"concurrency {level.concurrency}: every request failed")
        return RunBenchOutput(
            benchmark_id=record.id,
            client=run.client,
            measured_from=measured_from,
            levels=[LevelSummary.of(level) for level in run.levels],
            correctness=verdict.summary if verdict else None,
            warnings=warnings,
        )


def _from_agent(args: RunBenchArgs, context: ToolContext) -> tuple[RunBenchArgs, str]:
    """The arguments with base_url as the agent reaches it, and a sentence saying where the load comes from."""
    if args.backend == "sglang":
        host = context.host_named(args.host)
        if not host.shares_agent_files:
            raise ToolError("backend 'sglang' runs only on a local or simulated host; use backend 'opsloop'")
        return args, f"sglang.bench_serving on {host.name}, against {args.base_url}"
    if args.host is None:
        return args, f"the agent's machine, against {args.base_url}"
    host = context.host_named(args.host)
    url = httpx.URL(args.base_url)
    if url.host is None or (url.port is None and url.scheme not in ("http", "https")):
        raise ToolError(f"base_url {args.base_url!r} needs a host and a port")
    address, port = host.endpoint(url.host, url.port or (443 if url.scheme == "https" else 80))
    reached = str(url.copy_with(host=address, port=port)).rstrip("/")
    how = (
        f"through a port forwarded to {url.host}:{url.port} on {host.name}" if reached != args.base_url else "directly"
    )
    return args.model_copy(update={"base_url": reached}), f"the agent's machine, {how} ({reached})"


def _probe(
    base_url: str,
    model: str,
    kind: EndpointKind,
    extra_body: dict[str, Any],
    max_tokens: int,
    *,
    timeout: float,
    request_timeout: float | None = None,
) -> CorrectnessVerdict:
    try:
        return asyncio.run(
            run_probes(
                base_url,
                model,
                kind=kind,
                max_tokens=max_tokens,
                extra_body=extra_body,
                timeout=timeout,
                request_timeout=request_timeout,
            )
        )
    except ProbeUnanswered as error:
        raise ToolError(f"the server did not answer the correctness probe: {error}") from None
    except ValueError as error:
        raise ToolError(str(error)) from None


class CheckCorrectnessArgs(ToolArgs):
    base_url: str = Field(description="Scheme, host and port of the server, e.g. http://127.0.0.1:30000")
    model: str = Field(description="Model name as served")
    endpoint: EndpointKind = "chat"
    max_tokens: int = Field(default=256, ge=8, le=8192)
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Merged into each request, e.g. to turn thinking off"
    )
    timeout_seconds: float = Field(default=300.0, gt=0, le=3600, description="Limit for the whole probe")


class CheckCorrectnessOutput(ToolOutput):
    verdict: CorrectnessVerdict


class CheckCorrectnessTool(Tool[CheckCorrectnessArgs, CheckCorrectnessOutput]):
    name = "check_correctness"
    description = (
        "Ask the server a few fixed questions with greedy decoding and check the answers are "
        "sane (not empty, no repetition loop, not garbled, the right fact). Run it after every "
        "bring-up or config change: a fast but garbled configuration must not count."
    )
    args_model = CheckCorrectnessArgs
    output_model = CheckCorrectnessOutput

    def timeout_for(self, args: CheckCorrectnessArgs) -> float:
        return args.timeout_seconds + 30.0

    def run(self, args: CheckCorrectnessArgs, context: ToolContext) -> CheckCorrectnessOutput:
        verdict = _probe(
            args.base_url, args.model, args.endpoint, args.extra_body, args.max_tokens, timeout=args.timeout_seconds
        )
        record_correctness(context.state, verdict, args.base_url)
        context.checkpoint()
        return CheckCorrectnessOutput(verdict=verdict)


class CheckLosslessArgs(ToolArgs):
    base_url: str = Field(description="Scheme, host and port of the server, e.g. http://127.0.0.1:30000")
    model: str = Field(description="Model name as served")
    reference: list[str] | None = Field(
        default=None,
        description="The baseline's outputs from an earlier call (its 'outputs'); omit on the baseline to record them",
    )
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=8, le=1024)
    min_prefix_fraction: float = Field(
        default=DEFAULT_MIN_PREFIX_FRACTION,
        gt=0.0,
        le=1.0,
        description="Tolerance for numerics: each output must share at least this fraction of the baseline's text",
    )


class CheckLosslessOutput(ToolOutput):
    verdict: LosslessVerdict


class CheckLosslessTool(Tool[CheckLosslessArgs, CheckLosslessOutput]):
    name = "check_lossless"
    description = (
        "The lossless gate for speculative decoding: greedy completions of a few fixed prompts. On the baseline "
        "(no reference) it records them; on a speculative configuration (reference = the baseline's outputs) it "
        "compares, and a divergence beyond the tolerance for numerics means the configuration changes the "
        "output and is wrong, whatever its speed. Works with any weights, random ones included."
    )
    args_model = CheckLosslessArgs
    output_model = CheckLosslessOutput
    timeout_seconds = 900.0

    def run(self, args: CheckLosslessArgs, context: ToolContext) -> CheckLosslessOutput:
        if args.reference is not None and len(args.reference) != len(PROMPTS):
            raise ToolError(
                f"reference must hold {len(PROMPTS)} outputs (one per gate prompt), not {len(args.reference)}"
            )
        try:
            outputs = asyncio.run(greedy_outputs(args.base_url, args.model, args.max_tokens))
        except (LosslessRequestFailed, ValueError) as error:
            raise ToolError(f"the lossless gate could not ask the server: {error}") from None
        if args.reference is None:
            verdict = LosslessVerdict(
                compared=False,
                passed=True,
                min_prefix_fraction=args.min_prefix_fraction,
                outputs=outputs,
                summary=f"recorded the greedy outputs of {len(outputs)} prompts as the reference",
            )
        else:
            verdict = compare(args.reference, outputs, args.min_prefix_fraction)
        return CheckLosslessOutput(verdict=verdict)
