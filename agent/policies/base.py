"""The policy contract: given a view of the run, decide the next actions.

Policies keep no hidden state that a resume would need: whatever they must remember lives in the
state document (tasks, findings, next steps), or, for the LLM policy, in its persisted transcript.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent.actions import Decision, Observation
from agent.state import ProjectState, Question


@dataclass
class PolicyView:
    state: ProjectState
    state_dir: Path
    tool_schemas: list[dict[str, Any]]
    # Results of the previous step's tool calls; after a crash, calls whose result was lost come back
    # with ``interrupted=True`` and must be verified before being repeated.
    observations: list[Observation] = field(default_factory=list)
    # Questions answered by a human since the policy last decided.
    new_answers: list[Question] = field(default_factory=list)
    # Set once by stuck detection: the policy is repeating itself or nothing is changing.
    nudge: str | None = None


class Policy(Protocol):
    name: str

    def decide(self, view: PolicyView) -> Decision:
        """Return the next actions. Exceptions here are unexpected failures (exit code 1)."""
        ...
