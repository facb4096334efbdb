"""The closing report: baseline vs final, what was changed and why, and where things stand."""

from __future__ import annotations

from agent.policies.runbook.choices import measured
from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState


def _figures(state: ProjectState, progress: RunbookProgress, purpose: str) -> str:
    values = measured(state, progress, purpose)  # type: ignore[arg-type]
    parts = [
        f"single-stream {values['single_stream_tok_s']:.1f} tok/s" if values["single_stream_tok_s"] else "",
        f"peak {values['peak_tok_s']:.0f} tok/s" if values["peak_tok_s"] else "",
        f"acceptance length {values['accept_length']:.2f}" if values["accept_length"] else "",
    ]
    return ", ".join(part for part in parts if part) or "not measured"


def final_report(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> str:
    chosen = progress.chosen or "baseline"
    lines = [
        f"Goal: {state.goal}",
        f"Serving {progress.served_model} with {progress.engine} at {progress.base_url} (configuration: {chosen}).",
        "",
        f"Baseline: {_figures(state, progress, 'baseline')}.",
    ]
    for purpose, title in (("offshelf", "Off-the-shelf drafter"), ("trained", "Trained drafter")):
        if f"{purpose} single" in progress.benchmarks:
            lines.append(f"{title}: {_figures(state, progress, purpose)}.")
    if chosen != "baseline":
        lines.append(
            f"Kept: {chosen} drafter (single-stream gain of at least "
            f"{settings.speculative_gain_needed:.2f}x over the baseline)."
        )
    elif progress.speculative_wanted:
        lines.append("Kept: the baseline; no drafter beat it on single-stream throughput.")
    if progress.training.notes:
        lines.append(f"Drafter training: {'; '.join(progress.training.notes)}.")
    lines += ["", f"Launch attempts: {len(progress.attempts)}."]
    for attempt in progress.attempts:
        detail = f"{attempt.outcome}" + (f" ({attempt.diagnosis})" if attempt.diagnosis else "")
        lines.append(f"  {attempt.number}. {attempt.purpose}: {attempt.change} -> {detail}")
    if progress.changes:
        lines += ["", "Changes and why:"] + [f"  - {change}" for change in progress.changes]
    config = progress.base_config
    settings_line = ", ".join(
        f"{key}={value}"
        for key, value in sorted(config.items())
        if key not in ("env", "model_path") and value not in (None, False, [], {})
    )
    lines += ["", f"Final engine settings: {settings_line}"]
    if config.get("env"):
        lines.append("Environment: " + ", ".join(f"{key}={value}" for key, value in sorted(config["env"].items())))
    serving = progress.attempts[-1].process if progress.attempts else None
    if serving:
        lines += [
            "",
            f"{serving} keeps serving at {progress.base_url}; stop it with: "
            f'agent tool stop_engine --args \'{{"name": "{serving}"}}\'',
        ]
    return "\n".join(lines)
