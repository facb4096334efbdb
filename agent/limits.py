"""Budgets in one place: steps, wall time and money. Reaching one blocks the run with a question.

The question asks whether to extend. The answers that lift a budget are ``extend`` (doubles each
budget that ran out) and ``extend N`` (adds N to each: steps, seconds or US dollars); setting a new
value on the command line (``agent resume --max-steps 500``) lifts it too. Any other answer leaves
the budget where it is, so the next resume asks again instead of running past it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.actions import Ask
from agent.events import LimitReached, UsageError

if TYPE_CHECKING:
    from agent.state import ProjectState

# An extension ("extend", "extend 50", "extend by $5", "yes"), alone or followed by a comma and a remark for
# the policy ("extend 4, else keep the baseline"); "extend? no" and "yes... no wait" are not extensions.
_EXTEND = re.compile(
    r"\s*(?:extend|yes|y|continue)(?:\s+(?:by\s+)?\$?\s*(?P<amount>\d+(?:\.\d+)?))?\s*(?:[,;]\s+\S.*)?",
    re.IGNORECASE | re.DOTALL,
)


class Limits(BaseModel):
    """The run's budgets, each finite and positive: the ``[limits]`` section of the configuration seeds them
    when a run starts; from then on the state document holds them (answers and ``agent resume --max-*``
    change them there)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_steps: int = Field(default=200, ge=1)
    """Decisions before the run stops to ask whether to extend."""
    max_wall_seconds: float = Field(default=6 * 3600.0, gt=0, allow_inf_nan=False)
    """Wall-clock seconds the agent may spend on the run (time while it is stopped does not count)."""
    max_cost_usd: float = Field(default=50.0, gt=0, allow_inf_nan=False)
    """US dollars the model calls may cost."""


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
    raise LimitReached(
        Ask(
            question=f"Budget reached ({'; '.join(budgets)}); extend?",
            context=f"The run stopped before step {state.step} because a budget ran out. Answer 'extend' to "
            "double it, 'extend N' to add N (steps, seconds or dollars), or raise it with "
            "--max-steps / --max-wall-seconds / --max-cost-usd on resume.",
            evidence=[*budgets, f"latest finding: {latest}"],
            options=["extend", "extend N"],
            hypothesis="The work is not finished; more budget lets it continue from where it stopped.",
            question_kind="limit",
        )
    )


def extend_limits(state: ProjectState, answer: str) -> list[str] | None:
    """Apply an ``extend`` answer to every exhausted budget. None when the answer is not an extension."""
    match = _EXTEND.fullmatch(answer)
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


def set_limits(
    state: ProjectState,
    max_steps: int | None = None,
    max_wall_seconds: float | None = None,
    max_cost_usd: float | None = None,
) -> list[str]:
    """Set budgets outright (command-line flags). Returns what changed, described for a finding; a value
    out of range is a :class:`UsageError` and changes nothing."""
    given = {"max_steps": max_steps, "max_wall_seconds": max_wall_seconds, "max_cost_usd": max_cost_usd}
    changes = {name: value for name, value in given.items() if value is not None}
    try:
        state.limits = Limits.model_validate({**state.limits.model_dump(), **changes})
    except ValidationError as error:
        first = error.errors()[0]
        raise UsageError(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}") from None
    described = []
    if max_steps is not None:
        described.append(f"max steps {max_steps}")
    if max_wall_seconds is not None:
        described.append(f"max wall time {max_wall_seconds:.0f} s")
    if max_cost_usd is not None:
        described.append(f"max cost ${max_cost_usd:.2f}")
    return described
