"""Prompt size over a long LLM run: tokens sent per model call, step after step.

The real LLM policy (built as the wiring builds it, default context settings unless overridden) runs
in the real loop with a real store, and talks through the official SDK over HTTP to the loopback
model server (``twin.model_api``). The server plays a model that reads a log every step (about
``--output-chars`` characters of tool output) and records a finding every tenth step, then finishes.
Prompt tokens are counted on each request as the server receives it, the way the server counts them
for its ``usage`` (4 characters a token over the system prompt, tools and messages).

    python -m benchmarks.prompt_size --steps 3000 --provider anthropic
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.state import ProjectState
from agent.store import StateStore
from benchmarks.common import emit, machine, note, percentile, ratio
from benchmarks.llm_agent import ProviderName, agent_for, make_policy
from twin.model_api.script import ModelTurn, RecordedRequest, Step, ToolUse
from twin.model_api.server import ModelServer
from twin.model_api.wire import CHARS_PER_TOKEN

TARGET_RATIO = 1.2


def prompt_tokens(request: RecordedRequest) -> int:
    """Estimated prompt tokens of one request: system prompt, tool definitions and messages."""
    body = request.body
    return len(json.dumps([body.get("system"), body.get("tools"), body.get("messages")])) // CHARS_PER_TOKEN


class ReadingModel:
    """The model the server plays: it reads the log (``emit``, about ``output_chars`` characters back)
    every turn, records a finding every tenth turn, and finishes after ``steps`` turns. Each request is
    measured as it arrives and its body then dropped, so thousands of large requests are not all kept."""

    def __init__(self, steps: int, output_chars: int) -> None:
        self.steps, self.output_chars = steps, output_chars
        self.tokens: list[int] = []
        self.sizes: list[int] = []

    def __call__(self, request: RecordedRequest) -> Step:
        turn = len(self.tokens)
        if turn % 250 == 0:
            note(f"model call {turn}")
        self.tokens.append(prompt_tokens(request))
        self.sizes.append(request.raw_size)
        request.body = {}
        if turn >= self.steps:
            return ModelTurn(tool_calls=[ToolUse("finish", {"summary": f"finished after {turn} steps"})])
        line = f"step {turn} engine log line; "
        calls = [ToolUse("emit", {"text": line, "repeat": max(1, self.output_chars // len(line))})]
        if turn % 10 == 0:
            calls.append(
                ToolUse("update_state", {"findings": [{"summary": f"checkpoint {turn}", "evidence": [f"step {turn}"]}]})
            )
        return ModelTurn(text=f"Step {turn}: reading the log again.", tool_calls=calls)


def around(values: list[int], step: int, width: int) -> dict[str, Any]:
    """Median and max of ``values`` (indexed by step, 1-based) over ``width`` calls ending at ``step``."""
    window = values[max(0, step - width) : step]
    return {
        "step": step,
        "calls": len(window),
        "median_tokens": round(percentile(window, 0.5)),
        "max_tokens": max(window),
        "min_tokens": min(window),
    }


def run(
    steps: int, provider: ProviderName, stream: bool, output_chars: int, context: dict[str, Any], directory: Path
) -> tuple[ReadingModel, ProjectState, str, int]:
    meter = ReadingModel(steps, output_chars)
    store = StateStore(directory / "state")
    state = ProjectState(goal="keep reading the engine log (prompt size benchmark)")
    # The pretend model has list prices: thousands of 40k-token prompts would hit the cost budget.
    state.limits.max_steps, state.limits.max_wall_seconds, state.limits.max_cost_usd = steps + 20, 1e9, 1e9
    store.save(state)
    with ModelServer(responder=meter) as server:
        overrides: dict[str, Any] = {"request_timeout_seconds": 60.0}
        if context:
            overrides["context"] = context
        policy = make_policy(server, provider, stream, **overrides)
        event = agent_for(policy, store, state).run()
        policy.close()
        rejected = len(server.rejections)
    store.close()
    return meter, state, event, rejected


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--provider", choices=["anthropic", "openai"], default="anthropic")
    parser.add_argument("--stream", action="store_true", help="Streaming responses (default: JSON)")
    parser.add_argument("--output-chars", type=int, default=2700, help="Tool output per step")
    parser.add_argument("--checkpoints", default="100,1000,3000")
    parser.add_argument("--window", type=int, default=50, help="Calls per reported window (ending there)")
    parser.add_argument(
        "--context",
        default="",
        help="JSON overrides of the llm context settings, "
        'e.g. {"window_budget_tokens": 3000} (default: the shipped defaults)',
    )
    options = parser.parse_args(argv)
    context = json.loads(options.context) if options.context else {}
    checkpoints = sorted({int(part) for part in options.checkpoints.split(",") if 0 < int(part) <= options.steps})
    if not checkpoints:
        parser.error("no checkpoint within --steps")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="opsloop-prompt-bench-") as scratch:
        meter, state, event, rejected = run(
            options.steps, options.provider, options.stream, options.output_chars, context, Path(scratch)
        )
    tokens = meter.tokens
    windows = [around(tokens, step, options.window) for step in checkpoints if step <= len(tokens)]
    if not windows:
        sys.exit(
            f"benchmarks.prompt_size: the run ended ({event}) after {len(tokens)} model calls, "
            f"before step {checkpoints[0]}"
        )
    first, last = windows[0], windows[-1]
    settled = tokens[checkpoints[0] :] or tokens
    value = ratio(last["median_tokens"], first["median_tokens"])
    note(
        f"{len(tokens)} calls; median prompt at step {first['step']}: {first['median_tokens']}, "
        f"at step {last['step']}: {last['median_tokens']}"
    )
    emit(
        {
            "benchmark": "prompt_size",
            "steps": options.steps,
            "provider": options.provider,
            "stream": options.stream,
            "output_chars_per_step": options.output_chars,
            "context_overrides": context,
            "exit_event": event,
            "model_calls": len(tokens),
            "rejected_requests": rejected,
            "state_steps": state.step,
            "windows": windows,
            "max_tokens_overall": max(tokens),
            "max_tokens_after_first_checkpoint": max(settled),
            "max_request_bytes": max(meter.sizes),
            "usage_input_tokens": state.usage.input_tokens,
            "ratio": {
                "numerator_step": last["step"],
                "denominator_step": first["step"],
                "value": value,
                "max_ratio": ratio(max(tokens[-options.window :]), max(tokens[: first["step"]])),
                "target_max": TARGET_RATIO,
                "met": value is not None and value <= TARGET_RATIO,
            },
            "wall_seconds": round(time.perf_counter() - started, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
