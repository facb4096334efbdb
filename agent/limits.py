"""Budgets in one place: steps, wall time and money. Reaching one blocks the run with a question.

The question asks whether to extend. The answers that lift a budget are ``extend`` (doubles each
budget that ran out) and ``extend N`` (adds N to each: steps, seconds or US dollars); setting a new
value on the command line (``agent resume --max-steps 500``) lifts it too. Any other answer leaves
the budget where it is, so the next resume asks again instead of running past it.
"""

from __future__ import annotations

import re

from agent.actions import Ask
from agent.events import LimitReached
from agent.state import ProjectState

_EXTEND = re.compile(r"^\s*(?:extend|yes|y|continue)\b(?:\s*(?:by\s*)?\$?\s*(?P<amount>\d+(?:\.\d+)?))?",
                     re.IGNORECASE)


def exhausted_limits(state: ProjectState) -> list[str]:
    """Names of the budgets that have run out: ``steps``, ``wall``, ``cost``."""
    usage, limits = state.usage, state.limits
    names = []
    if state.step >= limits.max_steps:
        names.append("steps")
    if usage.wall_seconds >= limits.max_wall_seconds:
        names.append("wall")
    if usage.cost_usd >= limits.max_cost_usd:
        names.append("cost")
    return names


def describe_budget(state: ProjectState, name: str) -> str:
    usage, limits = state.usage, state.limits
    if name == "steps":
        return f"steps: {state.step} of {limits.max_steps}"
    if name == "wall":
        return f"wall time: {usage.wall_seconds:.0f} s of {limits.max_wall_seconds:.0f} s"
    return f"cost: ${usage.cost_usd:.2f} of ${limits.max_cost_usd:.2f}"


def check_limits(state: ProjectState) -> None:
    """Raise :class:`LimitReached` (a question asking to extend) when any budget has run out."""
    names = exhausted_limits(state)
    if not names:
        return
    budgets = [describe_budget(state, name) for name in names]
    latest = state.findings[-1].summary if state.findings else "no findings recorded yet"
    raise LimitReached(Ask(
        question=f"Budget reached ({'; '.join(budgets)}); extend?",
        context=f"The run stopped before step {state.step} because a budget ran out. Answer 'extend' to "
                "double it, 'extend N' to add N (steps, seconds or dollars), or raise it with "
                "--max-steps / --max-wall-seconds / --max-cost-usd on resume.",
        evidence=[*budgets, f"latest finding: {latest}"],
        options=["extend", "extend N"],
        hypothesis="The work is not finished; more budget lets it continue from where it stopped.",
        question_kind="limit",
    ))


def extend_limits(state: ProjectState, answer: str) -> list[str] | None:
    """Apply an ``extend`` answer to every exhausted budget. None when the answer is not an extension."""
    match = _EXTEND.match(answer)
    if match is None:
        return None
    amount = float(match.group("amount")) if match.group("amount") else None
    limits = state.limits
    changed = []
    for name in exhausted_limits(state):
        if name == "steps":
            limits.max_steps += int(amount) if amount is not None else max(limits.max_steps, 1)
        elif name == "wall":
            limits.max_wall_seconds += amount if amount is not None else max(limits.max_wall_seconds, 1.0)
        else:
            limits.max_cost_usd += amount if amount is not None else max(limits.max_cost_usd, 0.01)
        changed.append(describe_budget(state, name))
    return changed


def set_limits(state: ProjectState, max_steps: int | None = None, max_wall_seconds: float | None = None,
               max_cost_usd: float | None = None) -> list[str]:
    """Set budgets outright (command-line flags). Returns what changed, described for a finding."""
    limits, changed = state.limits, []
    if max_steps is not None:
        limits.max_steps = max_steps
        changed.append(f"max steps {max_steps}")
    if max_wall_seconds is not None:
        limits.max_wall_seconds = max_wall_seconds
        changed.append(f"max wall time {max_wall_seconds:.0f} s")
    if max_cost_usd is not None:
        limits.max_cost_usd = max_cost_usd
        changed.append(f"max cost ${max_cost_usd:.2f}")
    return changed
