"""The deterministic, offline runbook policy (the default when no model is configured)."""

from agent.policies.runbook.policy import RunbookPolicy
from agent.policies.runbook.settings import RunbookSettings

__all__ = ["RunbookPolicy", "RunbookSettings", "build_runbook_policy"]


def build_runbook_policy(config: object) -> RunbookPolicy:
    """The runbook with its default settings (the simulated host gets short benchmarks automatically)."""
    return RunbookPolicy()
