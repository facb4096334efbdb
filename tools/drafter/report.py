"""What a prerequisite check found, and the report ``train_drafter`` refuses with (or a dry run returns)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tools.drafter.hidden_states import PrepareCommand

CheckName = Literal[
    "specforge_environment",
    "prepare_script",
    "gpu_memory",
    "deployment_mode",
    "mooncake",
    "capture_server",
]
REFUSED = "SpecForge training cannot start"  # how a refusal begins (the runbook recognises it)


class PrerequisiteCheck(BaseModel):
    name: CheckName
    ok: bool
    detail: str
    absent: bool = Field(
        default=False,
        description="Nothing of it is set up on this host (as opposed to set up but failing): the agent "
        "cannot supply it, and nothing suggests training was meant to run here",
    )


class PrerequisiteReport(BaseModel):
    route: Literal["online", "offline"]
    specforge_python: str | None = None
    checks: list[PrerequisiteCheck] = Field(default_factory=list)
    prepare: PrepareCommand | None = Field(default=None, description="The hidden-state preparation (offline)")
    offline_route: list[str] = Field(default_factory=list, description="How to train offline instead")

    @property
    def missing(self) -> list[PrerequisiteCheck]:
        return [check for check in self.checks if not check.ok]

    def describe(self) -> str:
        lines = [
            f"{REFUSED} ({self.route}); missing: "
            + "; ".join(f"{check.name}: {check.detail}" for check in self.missing)
        ]
        if self.offline_route:
            lines.append(
                "Offline route (hidden states from the target first, then training; no capture server "
                "or Mooncake needed): " + " && ".join(self.offline_route)
            )
        return "\n".join(lines)
