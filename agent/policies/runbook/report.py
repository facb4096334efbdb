"""The closing report: the engine, baseline vs final, each drafter tried (its figures and acceptance, or why it
was dropped), why the kept configuration was kept, what was changed and why, and where things stand."""

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
        f"acceptance length {values['accept_length']:.2f}" if values["accept_length"] is not None else "",
    ]
    return ", ".join(part for part in parts if part) or "not measured"


def _engine(state: ProjectState, progress: RunbookProgress) -> str:
    """The engine release serving, its distribution, and where it runs."""
    engine = progress.engine or "?"
    install = state.environment.engine_installs.get(engine)
    version = state.environment.packages.get(engine) or (install.version if install else None) or "version unknown"
    distribution = (
        f" (distribution {install.distribution})" if install and install.distribution not in (None, engine) else ""
    )
    config = progress.base_config
    if progress.device == "cpu":
        space = (config.get("env") or {}).get("VLLM_CPU_KVCACHE_SPACE")
        where = f"on the CPU, TP {config.get('tp_size')} (one rank per NUMA node), KV cache {space} GiB"
    else:
        where = f"on {config.get('tp_size', '?')} GPU(s)"
    return f"{engine} {version}{distribution} {where}"


def final_report(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> str:
    chosen = progress.chosen or "baseline"
    lines = [
        f"Goal: {state.goal}",
        f"Serving {progress.served_model} with {progress.engine} at {progress.base_url} (configuration: {chosen}).",
        f"Engine: {_engine(state, progress)}.",
        "",
        f"Baseline: {_figures(state, progress, 'baseline')}.",
    ]
    for purpose, title in (("offshelf", "Off-the-shelf drafter"), ("trained", "Trained drafter")):
        measured_here = f"{purpose} single" in progress.benchmarks
        verdict = progress.verdicts.get(purpose)
        if purpose in progress.rejected:
            lines.append(f"{title}: dropped, its output differs from the baseline's ({progress.rejected[purpose]}).")
        elif measured_here or verdict:
            figures = f"{_figures(state, progress, purpose)}; " if measured_here else ""
            lines.append(f"{title}: {figures}{verdict or 'measured'}.")
    if chosen != "baseline":
        why = progress.verdicts.get(chosen, "it beat the baseline").removeprefix("kept: ")
        lines.append(f"Kept: the {chosen} drafter ({why}).")
    elif progress.speculative_wanted:
        lines.append(f"Kept: the baseline; {_why_baseline(progress)}.")
    if progress.training.notes:
        lines.append(f"Drafter training: {'; '.join(progress.training.notes)}.")
    if progress.training_pointless:
        lines.append(f"No drafter was trained: {progress.training_pointless}.")
    if progress.ending is not None:
        lines.append(f"The run ended early: {progress.ending.reason}.")
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
            f"{serving} keeps serving at {progress.base_url}{_reached(progress)}; stop it with: "
            f'agent tool stop_engine --args \'{{"name": "{serving}"}}\'',
        ]
    return "\n".join(lines)


def _why_baseline(progress: RunbookProgress) -> str:
    """The true reason no drafter was kept: each drafter's own verdict, or the lossless gate's."""
    reasons = [
        f"the {purpose} drafter changed the greedy output (lossless gate)"
        if purpose in progress.rejected
        else f"the {purpose} drafter was {progress.verdicts[purpose]}"
        for purpose in ("offshelf", "trained")
        if purpose in progress.rejected or purpose in progress.verdicts
    ]
    return "; ".join(reasons) or "no drafter was measured"


def _reached(progress: RunbookProgress) -> str:
    return f" (from this machine: {progress.reached_at})" if progress.reached_at else ""
