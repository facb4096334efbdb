"""Taking a human's answer on board: stop, keep waiting, settings to apply, or permission to go past a question.

An answer that begins with a stop word ("stop", "stop here", "give up", "leave it", "abort", ...) and holds
no settings and nothing asking to go on ("retry", "wait", ...) ends the run cleanly: as done when the
answer says to keep what works (or when a measured configuration serves), as failed when it gives up (or
when nothing serves), with the question as the reason. Any other text is guidance: ``NAME=value``
settings are applied, "keep waiting" goes back to watching a starting engine, and the run goes past the
question.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agent.policies.runbook.progress import Ending, RunbookProgress
from agent.policies.runbook.remedies import apply_remedy
from agent.state import ProjectState, Question

_SETTING = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)=(\"[^\"]*\"|'[^']*'|\S+)")
_STOP = re.compile(
    r"^\W*(?:please\s+|ok(?:ay)?[,.]?\s+|just\s+)?"
    r"(?:stop|give\s+up|leave\s+it|abort|quit|cancel|halt|enough|end\s+(?:it|here|the\s+run)|don'?t\s+bother)\b",
    re.IGNORECASE,
)
_GO_ON = re.compile(r"\b(?:retry|try|wait|waiting|continue|relaunch|restart|proceed|go\s+on)\b", re.IGNORECASE)
_FAIL = re.compile(r"\b(?:give\s+up|fail(?:ed)?|abort)\b", re.IGNORECASE)
_KEEP = re.compile(r"\b(?:keep|done|good\s+enough|as\s+it\s+is|baseline|what\s+works)\b", re.IGNORECASE)
_KEEP_WAITING = re.compile(r"\b(?:keep\s+waiting|wait(?:\s+longer|\s+more)?|let\s+it\s+(?:load|run|finish))\b", re.I)
_NO_TRAINING = re.compile(r"\b(?:keep|stop|baseline|skip)\b", re.IGNORECASE)


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


def is_stop(answer: str) -> bool:
    """A stop answer: a stop word first, no settings, nothing that asks to go on."""
    return bool(_STOP.search(answer)) and not _SETTING.search(answer) and not _GO_ON.search(answer)


def ending_for(state: ProjectState, progress: RunbookProgress, answer: str, question: Question | None) -> Ending:
    """Done or failed, per the answer; a neutral stop is done only when a measured configuration serves."""
    serving = bool(progress.base_url) and "baseline single" in progress.measurements
    keep = bool(_KEEP.search(answer)) and not _FAIL.search(answer)
    status = "done" if keep or (serving and not _FAIL.search(answer)) else "failed"
    asked = question.question if question is not None else "the question"
    reason = f"stopped on the operator's answer {answer!r} to: {asked}"
    if status == "failed" and question is not None and question.hypothesis:
        reason += f" (my hypothesis: {question.hypothesis})"
    return Ending(status=status, reason=reason)


def apply_answer(state: ProjectState, progress: RunbookProgress, question: Question) -> None:
    """Record the answer and act on it: end, keep waiting, or apply its settings and go past the question."""
    answer = question.answer or ""
    asked = progress.blocked_on or "question"
    own_question = progress.blocked_on is not None  # a budget question is the loop's, not the runbook's
    # "stop" to the training question means no training, not the end of the run: the best measured config stays.
    no_training = asked == "training_setup" and bool(_NO_TRAINING.search(answer))
    if own_question and is_stop(answer) and not no_training:
        progress.ending = ending_for(state, progress, answer, question)
        state.add_finding(f"operator answered the {asked} question: {answer!r}; the run ends {progress.ending.status}")
        progress.blocked_on, progress.phase = None, "end"
        return
    new_config, changes = apply_remedy(progress.base_config, settings_in(answer), progress.engine_settings)
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
    if asked == "slow_load" and not changes and _KEEP_WAITING.search(answer):
        progress.phase = "await"  # the same engine, watched again
    elif no_training:
        progress.purpose, progress.phase = "trained", "advance"  # no training: keep the best measured config
        progress.training.notes.append(f"not done: the operator answered {answer!r}")
    elif asked == "training_setup":
        progress.training.step, progress.training.reprobe = "check", True
    elif own_question and progress.phase in ("verify", "bench", "ask", "recheck", "recheck_kernel"):
        progress.phase = "launch"  # e.g. garbled output: relaunch with the new settings
