"""Comparing measured configurations and choosing what the run does next."""

from __future__ import annotations

from agent.policies.runbook.progress import Measurement, Purpose, RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.bench.runner import LevelReport


def _measurement(state: ProjectState, progress: RunbookProgress, key: str) -> Measurement | None:
    """The figures of one benchmark: from the progress record, else (progress written before it kept
    figures) from the stored record's first level."""
    if key in progress.measurements:
        return progress.measurements[key]
    for record in state.benchmarks:
        if record.id == progress.benchmarks.get(key) and record.metrics.get("levels"):
            level = LevelReport.model_validate(record.metrics["levels"][0])
            return Measurement(
                output_tok_s=level.output_throughput, accept_length=level.spec.accept_length if level.spec else None
            )
    return None


def measured(state: ProjectState, progress: RunbookProgress, purpose: Purpose) -> dict[str, float | None]:
    """Single-stream and peak output tok/s and the acceptance length of one configuration."""
    single = _measurement(state, progress, f"{purpose} single")
    peak = _measurement(state, progress, f"{purpose} peak")
    accept = (single.accept_length if single else None) or (peak.accept_length if peak else None)
    return {
        "single_stream_tok_s": single.output_tok_s if single else None,
        "peak_tok_s": peak.output_tok_s if peak else None,
        "accept_length": accept,
    }


def speedup(state: ProjectState, progress: RunbookProgress, purpose: Purpose) -> float | None:
    baseline = measured(state, progress, "baseline")["single_stream_tok_s"]
    candidate = measured(state, progress, purpose)["single_stream_tok_s"]
    if not baseline or candidate is None:
        return None
    return candidate / baseline


def accepts_too_little(
    state: ProjectState, progress: RunbookProgress, purpose: Purpose, settings: RunbookSettings
) -> bool:
    """Whether a drafter's measured acceptance length is below the floor a drafter needs to pay for itself."""
    accept = measured(state, progress, purpose)["accept_length"]
    return accept is not None and accept < settings.drafter_accept_length_floor


def best(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> Purpose:
    """The fastest single-stream configuration; speculation must beat the baseline by the set margin and accept
    enough drafted tokens for that gain to be real."""
    chosen: Purpose = "baseline"
    chosen_ratio = settings.speculative_gain_needed
    for purpose in ("offshelf", "trained"):
        ratio = speedup(state, progress, purpose)
        if ratio is not None and ratio >= chosen_ratio and not accepts_too_little(state, progress, purpose, settings):
            chosen, chosen_ratio = purpose, ratio
    return chosen


def compare_finding(
    state: ProjectState, progress: RunbookProgress, purpose: Purpose, settings: RunbookSettings
) -> None:
    figures = measured(state, progress, purpose)
    base = measured(state, progress, "baseline")
    ratio = speedup(state, progress, purpose)
    peak_ratio = (
        figures["peak_tok_s"] / base["peak_tok_s"] if figures["peak_tok_s"] is not None and base["peak_tok_s"] else None
    )
    fast_enough = ratio is not None and ratio >= settings.speculative_gain_needed
    too_little = accepts_too_little(state, progress, purpose, settings)
    verdict = "wins" if fast_enough and not too_little else "loses"
    progress.verdicts[purpose] = (
        f"{'kept' if verdict == 'wins' else 'dropped'}: single-stream {_fmt(ratio, 2)}x the baseline "
        f"({'at least' if fast_enough else 'below'} the {settings.speculative_gain_needed:.2f}x needed), "
        f"acceptance length {_fmt(figures['accept_length'], 2)}"
    )
    if fast_enough and too_little:
        progress.verdicts[purpose] += (
            f" (below the {settings.drafter_accept_length_floor:.2f} a drafter needs: its measured gain is noise)"
        )
    state.add_finding(
        f"{purpose} drafter {verdict}: single-stream {_fmt(figures['single_stream_tok_s'])} vs baseline "
        f"{_fmt(base['single_stream_tok_s'])} tok/s ({_fmt(ratio, 2)}x), peak {_fmt(figures['peak_tok_s'])} vs "
        f"{_fmt(base['peak_tok_s'])} tok/s ({_fmt(peak_ratio, 2)}x), acceptance length "
        f"{_fmt(figures['accept_length'], 2)}",
        evidence=[
            f"benchmarks {progress.benchmarks.get(f'{purpose} single')}, {progress.benchmarks.get(f'{purpose} peak')}"
        ],
        pinned=True,
    )


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
        if progress.training_pointless:
            state.add_finding(f"no drafter training: {progress.training_pointless}", pinned=True)
            progress.chosen = "baseline"
            progress.purpose, progress.phase = "final", "launch"
            return
        # Training data is regenerated by the target; EAGLE verification keeps the target's output
        # distribution, so the running speculative engine serves that purpose without a relaunch.
        serving = bool(progress.attempts) and progress.attempts[-1].outcome == "ready"
        progress.purpose, progress.phase = "training_target", "train" if serving else "launch"
        return
    progress.chosen = best(state, progress, settings)
    if progress.chosen == "trained":
        progress.phase = "finish"
    else:
        progress.purpose, progress.phase = "final", "launch"


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def finish_serving(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> None:
    """End as done with the best measured configuration serving: finish now when it already serves, else
    launch it once more (purpose ``final``) and finish after its correctness check."""
    progress.chosen = progress.chosen or best(state, progress, settings)
    last = progress.attempts[-1] if progress.attempts else None
    serving = last is not None and last.outcome == "ready" and last.purpose in (progress.chosen, "final")
    if serving:
        progress.phase = "finish"
    else:
        progress.purpose, progress.phase = "final", "launch"
