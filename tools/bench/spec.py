"""Speculative-decoding acceptance for one benchmark run, from the server's own counters.

Order of preference (SGLang ``srt/metrics/collector.py``; vLLM ``v1/spec_decode/metrics.py``):
1. vLLM counters, differenced over the run: accept length = 1 + Δaccepted / Δdrafts (bonus token
   included, comparable with SGLang), acceptance rate = Δaccepted / Δdraft tokens.
2. SGLang counters (0.5.2x): accept length = Δ``sglang:generation_tokens_total`` /
   Δ``sglang:spec_verify_calls_total`` (tokens per verify pass, bonus included).
3. SGLang gauges ``sglang:spec_accept_length`` / ``spec_accept_rate`` read after the run: the value of
   the last logging window, not an exact per-run figure.
4. ``/server_info`` ``internal_states[0].avg_spec_accept_length``: cumulative since server start.
"""

from __future__ import annotations

import json
import math
from typing import Literal

from pydantic import BaseModel

from tools.bench.client import Endpoint, fetch

Sample = tuple[str, dict[str, str], float]

VLLM_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
SGLANG_TOKENS = "sglang:generation_tokens_total"
SGLANG_VERIFY = "sglang:spec_verify_calls_total"
SGLANG_LENGTH = "sglang:spec_accept_length"
SGLANG_RATE = "sglang:spec_accept_rate"
SGLANG_DRAFT_TOKENS = "sglang:spec_num_draft_tokens"


class SpecAcceptance(BaseModel):
    source: Literal["vllm_counters", "sglang_counters", "sglang_gauges", "server_info"]
    accept_length: float | None = None
    accept_rate: float | None = None
    per_run: bool
    note: str = ""


def parse_prometheus(text: str) -> list[Sample]:
    """Samples of a Prometheus text exposition: (name, labels, value). Comments are skipped."""
    samples: list[Sample] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        labels: dict[str, str] = {}
        if "{" in line:
            name, _, rest = line.partition("{")
            label_text, _, value_text = rest.rpartition("}")
            for item in _split_labels(label_text):
                key, _, value = item.partition("=")
                labels[key.strip()] = value.strip().strip('"')
        else:
            name, _, value_text = line.partition(" ")
        fields = value_text.split()
        if not fields:
            continue
        try:
            samples.append((name.strip(), labels, float(fields[0])))
        except ValueError:
            continue
    return samples


def _split_labels(text: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    quoted = False
    for character in text:
        if character == '"' and (not current or current[-1] != "\\"):
            quoted = not quoted
        if character == "," and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(character)
    if current:
        items.append("".join(current))
    return [item for item in items if item.strip()]


def _total(samples: list[Sample], name: str) -> float | None:
    """Sum over series, one per DP rank: SGLang repeats scheduler series per TP rank, so keep rank 0."""
    values = [
        value
        for sample_name, labels, value in samples
        if sample_name == name and labels.get("tp_rank", "0") == "0" and labels.get("pp_rank", "0") == "0"
    ]
    return sum(values) if values else None


def _mean(samples: list[Sample], name: str) -> float | None:
    values = [value for sample_name, _, value in samples if sample_name == name and math.isfinite(value)]
    return sum(values) / len(values) if values else None


def _delta(before: list[Sample], after: list[Sample], name: str) -> float | None:
    first, last = _total(before, name), _total(after, name)
    return None if first is None or last is None else last - first


def from_metrics(before: list[Sample], after: list[Sample]) -> SpecAcceptance | None:
    drafts = _delta(before, after, VLLM_DRAFTS)
    accepted = _delta(before, after, VLLM_ACCEPTED)
    if drafts and accepted is not None:
        draft_tokens = _delta(before, after, VLLM_DRAFT_TOKENS)
        return SpecAcceptance(
            source="vllm_counters",
            accept_length=1.0 + accepted / drafts,
            accept_rate=accepted / draft_tokens if draft_tokens else None,
            per_run=True,
        )
    verifies = _delta(before, after, SGLANG_VERIFY)
    tokens = _delta(before, after, SGLANG_TOKENS)
    if verifies and tokens is not None:
        length = tokens / verifies
        draft_count = _mean(after, SGLANG_DRAFT_TOKENS)
        rate = (length - 1.0) / (draft_count - 1.0) if draft_count and draft_count > 1 else None
        return SpecAcceptance(source="sglang_counters", accept_length=length, accept_rate=rate, per_run=True)
    gauge_length, gauge_rate = _mean(after, SGLANG_LENGTH), _mean(after, SGLANG_RATE)
    if gauge_length is not None and gauge_length > 0:
        return SpecAcceptance(
            source="sglang_gauges",
            accept_length=gauge_length,
            accept_rate=gauge_rate,
            per_run=False,
            note="value of the server's last logging window, not exact for this run",
        )
    return None


def from_server_info(body: bytes) -> SpecAcceptance | None:
    try:
        info = json.loads(body)
        states = info.get("internal_states") or []
        if isinstance(states, dict):  # PD-disaggregated: {"decode": [...]}
            states = states.get("decode") or []
        value = states[0].get("avg_spec_accept_length") if states else None
    except (ValueError, AttributeError, IndexError, TypeError):
        return None
    if not isinstance(value, int | float) or value <= 0:
        return None
    return SpecAcceptance(
        source="server_info",
        accept_length=float(value),
        per_run=False,
        note="cumulative since the server started (internal_states[0].avg_spec_accept_length)",
    )


async def read_metrics(endpoint: Endpoint) -> list[Sample] | None:
    """The /metrics samples, or None when the server exposes none (SGLang without --enable-metrics)."""
    try:
        status, body = await fetch(endpoint, "/metrics", timeout=10.0)
    except ConnectionError:
        return None
    return parse_prometheus(body.decode("utf-8", "replace")) if status == 200 else None


async def acceptance(endpoint: Endpoint, before: list[Sample] | None) -> SpecAcceptance | None:
    """Acceptance over the run that started when ``before`` was read; None without speculation."""
    after = await read_metrics(endpoint)
    if before is not None and after is not None:
        found = from_metrics(before, after)
        if found is not None:
            return found
    for path in ("/server_info", "/get_server_info"):
        try:
            status, body = await fetch(endpoint, path, timeout=10.0)
        except ConnectionError:
            return None
        if status == 200:
            return from_server_info(body)
    return None
