"""wait: pause before the next step, e.g. to give a loading engine or a training job time to progress.

Polling a slow job every step wastes steps and model calls; waiting a sensible interval between
polls is cheaper. Progress lines are printed for the human while waiting.
"""

from __future__ import annotations

import time

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput

MAX_WAIT_SECONDS = 600.0


class WaitArgs(ToolArgs):
    seconds: float = Field(gt=0, le=MAX_WAIT_SECONDS, description="How long to wait (at most 600 s).")
    reason: str = Field(default="", description="What is being waited for, shown to the human.")


class WaitOutput(ToolOutput):
    waited_seconds: float


class WaitTool(Tool[WaitArgs, WaitOutput]):
    name = "wait"
    blocks = "the given seconds (0-600) plus at most 10 s."
    description = (
        "Wait a number of seconds (at most 600) before the next step, e.g. between polls of a "
        "model that is loading or a drafter that is training. Say what you wait for."
    )
    args_model = WaitArgs
    output_model = WaitOutput

    def timeout_for(self, args: WaitArgs) -> float:
        return args.seconds + 10.0

    def run(self, args: WaitArgs, context: ToolContext) -> WaitOutput:
        started = time.monotonic()
        context.progress(f"waiting {args.seconds:g} s" + (f" for {args.reason}" if args.reason else ""))
        deadline = started + args.seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 5.0))
        return WaitOutput(waited_seconds=round(time.monotonic() - started, 3))
