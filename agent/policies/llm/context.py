"""Keeping the conversation window bounded: prune old tool outputs first, then fold the oldest turns.

Compaction starts when the window's estimated size passes the budget and brings it down to the low-water
mark, so that between compactions the prompt prefix is stable (good for provider prompt caches, and
required for replayed thinking blocks). State documents superseded by a later whole one go first, then
old tool outputs. Folded turns leave the window for good; :func:`fold_digest` condenses them (with the
model's thinking) into a digest kept in the state document.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.policies.llm.settings import ContextSettings
from agent.policies.llm.turns import (
    AssistantTurn,
    ToolResultRecord,
    UserTurn,
    arguments_json,
    estimate_tokens,
    turn_chars,
)

ASSISTANT_TEXT_KEEP_CHARS = 1_500
DIGEST_MAX_LINES = 30


@dataclass
class Compaction:
    window: list[AssistantTurn | UserTurn]
    folded: list[AssistantTurn | UserTurn] = field(default_factory=list)
    pruned_results: int = 0

    @property
    def edited(self) -> bool:
        """Whether the window changed (so what was sent before no longer prefixes the next request)."""
        return bool(self.folded or self.pruned_results)


def window_tokens(window: list[AssistantTurn | UserTurn], settings: ContextSettings) -> int:
    return estimate_tokens(sum(turn_chars(turn) for turn in window), settings.chars_per_token)


def compact(window: list[AssistantTurn | UserTurn], settings: ContextSettings) -> Compaction:
    """A window under the budget: unchanged if it already is, else pruned and folded to the low-water mark.

    The most recent ``keep_recent_turns`` turns are pruned only when folding everything older is not
    enough, and the newest turn last of all; the window always keeps at least those recent turns.
    """
    if window_tokens(window, settings) <= settings.window_budget_tokens:
        return Compaction(window=window)
    target = int(settings.window_budget_tokens * settings.low_water_fraction)
    turns = [turn.model_copy(deep=True) for turn in window]
    protected = min(settings.keep_recent_turns, len(turns))
    pruned = _drop_superseded_states(turns)
    pruned += _prune(turns[: len(turns) - protected], turns, target, settings)
    folded: list[AssistantTurn | UserTurn] = []
    while len(turns) > protected and window_tokens(turns, settings) > target:
        folded.append(turns.pop(0))
    # Start on an assistant turn, so no result in the window lost the call it answers.
    while len(turns) > protected and isinstance(turns[0], UserTurn):
        folded.append(turns.pop(0))
    pruned += _prune(turns[:-1], turns, target, settings)
    pruned += _prune(turns[-1:], turns, target, settings)
    return Compaction(window=turns, folded=folded, pruned_results=pruned)


def _drop_superseded_states(turns: list[AssistantTurn | UserTurn]) -> int:
    """Replace the state parts older than the newest whole state document with a one-line note."""
    latest = max(
        (index for index, turn in enumerate(turns) if isinstance(turn, UserTurn) and turn.state_full), default=-1
    )
    count = 0
    for turn in turns[: max(latest, 0)]:
        if isinstance(turn, UserTurn) and turn.state and not turn.state.startswith("[state"):
            turn.state = f"[state document of step {turn.step} left out: a newer one follows]"
            turn.state_full = False
            count += 1
    return count


def _prune(
    candidates: list[AssistantTurn | UserTurn],
    window: list[AssistantTurn | UserTurn],
    target: int,
    settings: ContextSettings,
) -> int:
    """Shorten tool outputs (and long notes) in ``candidates``, oldest first, until the window fits."""
    count = 0
    for turn in candidates:
        if window_tokens(window, settings) <= target:
            break
        if isinstance(turn, AssistantTurn):
            if len(turn.text) > ASSISTANT_TEXT_KEEP_CHARS:
                turn.text = turn.text[:ASSISTANT_TEXT_KEEP_CHARS] + " [... rest of this note pruned]"
            continue
        for index, result in enumerate(turn.results):
            if not result.pruned and len(result.content) > settings.pruned_result_keep_chars + 200:
                turn.results[index] = _pruned(result, settings.pruned_result_keep_chars)
                count += 1
    return count


def _pruned(result: ToolResultRecord, keep_chars: int) -> ToolResultRecord:
    head = result.content[:keep_chars]
    content = (
        f"[output pruned to keep the context small: {len(result.content)} characters; call "
        f"{result.name} again if you need them]\n{head}"
    )
    return result.model_copy(update={"content": content, "pruned": True})


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def fold_digest(turns: list[AssistantTurn | UserTurn]) -> tuple[str, list[str]]:
    """A finding (summary and evidence lines) that condenses turns folded out of the window."""
    results = {result.call_id: result for turn in turns if isinstance(turn, UserTurn) for result in turn.results}
    lines: list[str] = []
    calls = errors = 0
    for turn in turns:
        if isinstance(turn, UserTurn):
            lines.extend(f"step {turn.step} message: {_clip(note, 160)}" for note in turn.notes)
            continue
        if turn.thought:
            lines.append(f"step {turn.step} model: {_clip(turn.thought, 240)}")
        for call in turn.calls:
            calls += 1
            result = results.get(call.id)
            if result is None:
                outcome = "no result in the folded turns"
            elif result.is_error:
                errors += 1
                outcome = f"ERROR {_clip(result.content, 160)}"
            else:
                outcome = f"ok {_clip(result.content, 80)}"
            arguments = _clip(arguments_json(call.arguments), 100)
            lines.append(f"step {turn.step} {call.name}({arguments}) -> {outcome}")
    steps = [turn.step for turn in turns]
    first, last = (min(steps), max(steps)) if steps else (0, 0)
    if len(lines) > DIGEST_MAX_LINES:
        dropped = len(lines) - DIGEST_MAX_LINES
        lines = [f"({dropped} earlier lines of this digest left out)", *lines[-DIGEST_MAX_LINES:]]
    summary = (
        f"Conversation turns of steps {first}-{last} were folded out of the model's context "
        f"({calls} tool calls, {errors} errors); this digest keeps what they did."
    )
    return summary, lines
