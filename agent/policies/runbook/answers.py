"""Taking a human's answer on board: settings to apply and permission to go past a question."""

from __future__ import annotations

import json
import re
from typing import Any

from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.remedies import apply_remedy
from agent.state import ProjectState

_SETTING = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)=(\"[^\"]*\"|'[^']*'|\S+)")


def _value(text: str) -> Any:
    text = text.strip("\"'")
    try:
        return json.loads(text)
    except ValueError:
        return text


def settings_in(answer: str) -> dict[str, dict[str, Any]]:
    """``NAME=value`` pairs: upper-case names are environment variables, others launch-config fields."""
    action: dict[str, dict[str, Any]] = {"set_flag": {}, "set_env": {}}
    for name, raw in _SETTING.findall(answer):
        if name.isupper():
            action["set_env"][name] = raw.strip("\"'")
        else:
            action["set_flag"][name] = _value(raw)
    return action


def apply_answer(state: ProjectState, progress: RunbookProgress, answer: str) -> None:
    """Record the answer, apply any settings in it, and let the run go past the question asked."""
    asked = progress.blocked_on or "question"
    own_question = progress.blocked_on is not None  # a budget question is the loop's, not the runbook's
    new_config, changes = apply_remedy(progress.base_config, settings_in(answer))
    if changes:
        progress.base_config = new_config
        progress.changes.append(f"{', '.join(changes)} (from the operator's answer)")
    state.add_finding(
        f"operator answered the {asked} question: {answer!r}",
        evidence=[f"applied {', '.join(changes)}"] if changes else [],
    )
    if progress.blocked_on and progress.blocked_on not in progress.acknowledged:
        progress.acknowledged.append(progress.blocked_on)
    progress.blocked_on = None
    # The human has acted: the attempts so far no longer count against the budget for this purpose.
    progress.attempts_forgiven = len(progress.attempts)
    if asked == "training_setup" and re.search(r"\b(keep|stop|baseline|skip)\b", answer.lower()):
        progress.purpose, progress.phase = "trained", "advance"  # no training: keep the best measured config
        progress.training.notes.append(f"not done: the operator answered {answer!r}")
    elif asked == "training_setup":
        progress.training.step, progress.training.reprobe = "check", True
    elif own_question and progress.phase in ("verify", "bench"):
        progress.phase = "launch"  # e.g. garbled output: relaunch with the new settings
