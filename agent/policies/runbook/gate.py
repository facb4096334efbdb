"""Checking the output before trusting a speed: the lossless gate and answers a model cannot give.

After the correctness probe passes, each configuration meets the lossless gate (``check_lossless``): the
baseline records its greedy outputs on fixed prompts, and every speculative configuration must reproduce them
within the gate's tolerance for numerics. A configuration that does not is wrong whatever its speed: it is
dropped, and the report says why. A model that is not trained to answer the probe's facts (the
``expect_sensible_answers = false`` setting: random or test weights) does not block on wrong answers; the gate
is then what judges the speculative configurations.
"""

from __future__ import annotations

from agent.actions import ToolCall
from agent.policies.runbook import calls
from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.bench.correctness import CorrectnessVerdict
from tools.bench.lossless import LosslessVerdict


def lossless_call(state: ProjectState, progress: RunbookProgress) -> ToolCall:
    """Record the baseline's outputs, or compare a speculative configuration's with them."""
    arguments: dict[str, object] = {"base_url": progress.agent_url, "model": progress.served_model}
    if progress.purpose in calls.SPECULATIVE_PURPOSES and progress.lossless_reference:
        arguments["reference"] = progress.lossless_reference
    return calls.call(state, "check_lossless", arguments)


def on_lossless(state: ProjectState, progress: RunbookProgress, verdict: LosslessVerdict) -> None:
    """Keep the baseline's outputs; measure a configuration that passed; drop one that changes the output."""
    if not verdict.compared:
        if progress.purpose == "baseline":
            progress.lossless_reference = verdict.outputs
            state.add_finding(f"lossless gate: {verdict.summary}")
        progress.phase = "bench"
        return
    evidence = [
        f"{item.prompt!r}: agreement {item.agreement:.2f}; baseline {item.reference[:60]!r}, got {item.output[:60]!r}"
        for item in verdict.prompts
        if item.first_difference is not None
    ]
    if verdict.passed:
        state.add_finding(f"{progress.purpose} drafter configuration: {verdict.summary}", evidence=evidence)
        progress.phase = "bench"
        return
    progress.rejected[progress.purpose] = verdict.summary
    state.add_finding(
        f"{progress.purpose} drafter configuration is wrong whatever its speed: {verdict.summary}; dropped",
        evidence=evidence,
        pinned=True,
    )
    progress.phase = "advance"


def goes_on_despite_wrong_answers(
    state: ProjectState, progress: RunbookProgress, verdict: CorrectnessVerdict, settings: RunbookSettings
) -> bool:
    """True when the operator said the model does not answer facts: the probe's verdict is noted, not obeyed."""
    if settings.expect_sensible_answers:
        return False
    state.add_finding(
        f"{progress.purpose}: {verdict.passed_count} of {verdict.total} probe answers right; not blocking, the "
        "model is not expected to answer (expect_sensible_answers = false): the lossless gate checks the output",
        evidence=[f"{item.name}: {item.answer[:80]!r}" for item in verdict.results[:2]],
    )
    return True
