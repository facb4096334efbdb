"""Comparing measured configurations and choosing what the run does next."""

from __future__ import annotations

from typing import Any

from agent.policies.runbook.progress import Purpose, RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState


def _level(state: ProjectState, benchmark_id: str | None) -> dict[str, Any] | None:
    for record in state.benchmarks:
        if record.id == benchmark_id:
            levels = record.metrics.get("levels") or []
            return levels[0] if levels and isinstance(levels[0], dict) else None
    return None


def measured(state: ProjectState, progress: RunbookProgress, purpose: Purpose) -> dict[str, float | None]:
    """Single-stream and peak output tok/s and the acceptance length of one configuration."""
    single = _level(state, progress.benchmarks.get(f"{purpose} single"))
    peak = _level(state, progress.benchmarks.get(f"{purpose} peak"))

    def throughput(level: dict[str, Any] | None) -> float | None:
        value = level.get("output_throughput") if level else None
        return float(value) if isinstance(value, int | float) else None

    spec = (single or {}).get("spec") or (peak or {}).get("spec") or {}
    accept = spec.get("accept_length") if isinstance(spec, dict) else None
    return {"single_stream_tok_s": throughput(single), "peak_tok_s": throughput(peak),
            "accept_length": float(accept) if isinstance(accept, int | float) else None}


def speedup(state: ProjectState, progress: RunbookProgress, purpose: Purpose) -> float | None:
    baseline = measured(state, progress, "baseline")["single_stream_tok_s"]
    candidate = measured(state, progress, purpose)["single_stream_tok_s"]
    if not baseline or candidate is None:
        return None
    return candidate / baseline


def best(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> Purpose:
    """The fastest single-stream configuration; speculation must beat the baseline by the set margin."""
    chosen: Purpose = "baseline"
    chosen_ratio = settings.speculative_gain_needed
    for purpose in ("offshelf", "trained"):
        ratio = speedup(state, progress, purpose)
        if ratio is not None and ratio >= chosen_ratio:
            chosen, chosen_ratio = purpose, ratio
    return chosen


def compare_finding(state: ProjectState, progress: RunbookProgress, purpose: Purpose,
                    settings: RunbookSettings) -> None:
    figures = measured(state, progress, purpose)
    base = measured(state, progress, "baseline")
    ratio = speedup(state, progress, purpose)
    peak_ratio = (figures["peak_tok_s"] / base["peak_tok_s"]
                  if figures["peak_tok_s"] is not None and base["peak_tok_s"] else None)
    verdict = "wins" if ratio is not None and ratio >= settings.speculative_gain_needed else "loses"
    state.add_finding(
        f"{purpose} drafter {verdict}: single-stream {_fmt(figures['single_stream_tok_s'])} vs baseline "
        f"{_fmt(base['single_stream_tok_s'])} tok/s ({_fmt(ratio, 2)}x), peak {_fmt(figures['peak_tok_s'])} vs "
        f"{_fmt(base['peak_tok_s'])} tok/s ({_fmt(peak_ratio, 2)}x), acceptance length "
        f"{_fmt(figures['accept_length'], 2)}",
        evidence=[f"benchmarks {progress.benchmarks.get(f'{purpose} single')}, "
                  f"{progress.benchmarks.get(f'{purpose} peak')}"])


def advance(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> None:
    """After a configuration is measured (or dropped), pick the next purpose and phase."""
    done = progress.purpose
    if done == "final" or not progress.speculative_wanted:
        progress.chosen = progress.chosen or "baseline"
        progress.phase = "finish"
        return
    if done == "baseline" and progress.offshelf_drafter:
        progress.purpose, progress.phase = "offshelf", "launch"
        return
    if done == "baseline":
        progress.purpose, progress.phase = "training_target", "train"
        return
    if done == "offshelf":
        if best(state, progress, settings) == "offshelf":
            progress.chosen, progress.phase = "offshelf", "finish"
            return
        progress.purpose, progress.phase = "training_target", "launch"
        return
    progress.chosen = best(state, progress, settings)
    if progress.chosen == "trained":
        progress.phase = "finish"
    else:
        progress.purpose, progress.phase = "final", "launch"


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"
