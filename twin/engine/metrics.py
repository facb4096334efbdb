"""Serving counters and their Prometheus text rendering under each engine's metric names.

SGLang names from 0.5.8 ``srt/metrics/collector.py``; vLLM names from 0.33
``v1/metrics`` and ``v1/spec_decode/metrics.py``. Counters are exported with the
``_total`` suffix as prometheus_client does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)


@dataclass
class Histogram:
    buckets: tuple[float, ...] = LATENCY_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS))
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        self.total += value
        self.count += 1
        for index, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[index] += 1

    def render(self, name: str, labels: str) -> list[str]:
        lines = [f"# TYPE {name} histogram"]
        separator = "," if labels else ""
        for bound, count in zip(self.buckets, self.counts, strict=True):
            lines.append(f'{name}_bucket{{{labels}{separator}le="{bound}"}} {count}')
        lines.append(f'{name}_bucket{{{labels}{separator}le="+Inf"}} {self.count}')
        lines += [f"{name}_sum{{{labels}}} {self.total:.6f}", f"{name}_count{{{labels}}} {self.count}"]
        return lines


@dataclass
class Counters:
    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    aborted: int = 0
    running: int = 0
    waiting: int = 0
    used_tokens: int = 0
    gen_throughput: float = 0.0
    spec_verify_ct: int = 0  # verify passes (vLLM: drafts)
    spec_accepted: int = 0  # accepted draft tokens
    spec_drafted: int = 0  # proposed draft tokens
    spec_accepted_per_position: list[int] = field(default_factory=list)
    window_accept_length: float = 0.0
    ttft: Histogram = field(default_factory=Histogram)
    itl: Histogram = field(default_factory=Histogram)
    e2e: Histogram = field(default_factory=Histogram)

    def avg_accept_length(self) -> float:
        """Cumulative since start, bonus token included (SGLang ``avg_spec_accept_length``)."""
        if not self.spec_verify_ct:
            return 0.0
        return (self.spec_accepted + self.spec_verify_ct) / self.spec_verify_ct


def _line(kind: str, name: str, labels: str, value: float) -> list[str]:
    return [f"# TYPE {name.removesuffix('_total')} {kind}", f"{name}{{{labels}}} {value}"]


def render_sglang(
    counters: Counters,
    model: str,
    max_tokens: int,
    speculative: bool,
    cuda_graph: bool,
    draft_tokens: int = 0,
    modern: bool = False,
) -> str:
    """``modern``: SGLang 0.5.23 adds verify-call and draft-shape series for speculation."""
    scheduler = f'model_name="{model}",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
    tokenizer = f'model_name="{model}"'
    lines: list[str] = []
    usage = counters.used_tokens / max_tokens if max_tokens else 0.0
    for name, value in (
        ("num_running_reqs", counters.running),
        ("num_queue_reqs", counters.waiting),
        ("num_used_tokens", counters.used_tokens),
        ("token_usage", round(usage, 4)),
        ("max_total_num_tokens", max_tokens),
        ("gen_throughput", round(counters.gen_throughput, 3)),
        ("cache_hit_rate", 0.0),
        ("is_cuda_graph", int(cuda_graph)),
    ):
        lines += _line("gauge", f"sglang:{name}", scheduler, value)
    if speculative:
        rate_denominator = counters.spec_drafted or 1
        lines += _line("gauge", "sglang:spec_accept_length", scheduler, round(counters.window_accept_length, 4))
        lines += _line(
            "gauge", "sglang:spec_accept_rate", scheduler, round(counters.spec_accepted / rate_denominator, 4)
        )
        if modern:
            lines += _line("counter", "sglang:spec_verify_calls_total", scheduler, counters.spec_verify_ct)
            lines += _line("gauge", "sglang:spec_num_draft_tokens", scheduler, draft_tokens)
            lines += _line("gauge", "sglang:spec_num_steps", scheduler, max(0, draft_tokens - 1))
    for name, value in (
        ("prompt_tokens_total", counters.prompt_tokens),
        ("generation_tokens_total", counters.generation_tokens),
        ("num_requests_total", counters.requests),
        ("num_aborted_requests_total", counters.aborted),
    ):
        lines += _line("counter", f"sglang:{name}", tokenizer, value)
    lines += counters.ttft.render("sglang:time_to_first_token_seconds", tokenizer)
    lines += counters.itl.render("sglang:inter_token_latency_seconds", tokenizer)
    lines += counters.e2e.render("sglang:e2e_request_latency_seconds", tokenizer)
    return "\n".join(lines) + "\n"


def render_vllm(counters: Counters, model: str, max_tokens: int, speculative: bool) -> str:
    labels = f'engine="0",model_name="{model}"'
    lines: list[str] = []
    usage = counters.used_tokens / max_tokens if max_tokens else 0.0
    for name, value in (
        ("num_requests_running", counters.running),
        ("num_requests_waiting", counters.waiting),
        ("kv_cache_usage_perc", round(usage, 4)),
    ):
        lines += _line("gauge", f"vllm:{name}", labels, value)
    for name, value in (
        ("prompt_tokens_total", counters.prompt_tokens),
        ("generation_tokens_total", counters.generation_tokens),
        ("request_success_total", counters.requests),
    ):
        lines += _line("counter", f"vllm:{name}", labels, value)
    if speculative:
        for name, value in (
            ("spec_decode_num_drafts_total", counters.spec_verify_ct),
            ("spec_decode_num_draft_tokens_total", counters.spec_drafted),
            ("spec_decode_num_accepted_tokens_total", counters.spec_accepted),
        ):
            lines += _line("counter", f"vllm:{name}", labels, value)
        lines.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter")
        for position, value in enumerate(counters.spec_accepted_per_position):
            lines.append(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{position}"}} {value}'
            )
    lines += counters.ttft.render("vllm:time_to_first_token_seconds", labels)
    lines += counters.itl.render("vllm:inter_token_latency_seconds", labels)
    lines += counters.e2e.render("vllm:e2e_request_latency_seconds", labels)
    return "\n".join(lines) + "\n"
