"""Event-named exceptions that leave the loop, each carrying what to record.

Operator mistakes (bad flags, bad config, unreadable state) are :class:`UsageError` and raise at once,
before any work starts. A failing tool never raises out of the loop: it becomes an error result.
"""

from __future__ import annotations

from agent.actions import Ask


class LoopExit(Exception):
    """Base for the ways out of the loop."""


class GoalReached(LoopExit):
    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


class Blocked(LoopExit):
    """The run needs a human: the question is saved and notifications go out."""

    def __init__(self, ask: Ask) -> None:
        super().__init__(ask.question)
        self.ask = ask


class LimitReached(Blocked):
    """A budget (steps, wall time, cost) ran out; recorded as a question asking to extend it."""


class RunFailed(LoopExit):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UsageError(Exception):
    """An operator mistake: bad option, bad config, unreadable state. Exit code 2, one-line message."""


class StateDirectoryLocked(UsageError):
    def __init__(self, state_dir: str, pid: int | None) -> None:
        owner = f"PID {pid}" if pid else "another process"
        super().__init__(
            f"state directory {state_dir} is in use by a running agent ({owner}); "
            "wait for it to stop or use another --state-dir"
        )
        self.pid = pid
