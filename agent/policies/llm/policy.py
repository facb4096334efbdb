"""The LLM policy: one model call per decision, tools in both wire formats, a bounded context.

Each :meth:`LlmPolicy.decide` answers the model's previous tool calls (one result per call, by id),
compacts the window if it grew past its budget (folded turns become a finding in the state document),
sends system prompt + tools + window + the fresh state document, and maps the reply to actions. The
transcript is persisted as it goes, so ``agent resume`` continues the same conversation; without it the
run continues from the state document alone. When the model API cannot be reached, even after retries,
the decision is an :class:`Ask` explaining what failed; the policy never raises for an API failure.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from agent.actions import Action, Ask, Decision, Finish, ModelUsage, ToolCall
from agent.policies.base import PolicyView
from agent.policies.llm import context
from agent.policies.llm.builtin_tools import POLICY_TOOLS, policy_tool_schemas, to_action
from agent.policies.llm.pricing import cost_usd, price_for
from agent.policies.llm.reply import ModelReply, ModelRequest, ModelUnavailable, Provider
from agent.policies.llm.retry import call_with_retries
from agent.policies.llm.settings import LlmSettings
from agent.policies.llm.state_view import render_state_document
from agent.policies.llm.transcript import Transcript, TranscriptMark
from agent.policies.llm.turns import AssistantTurn, ToolCallRecord, ToolResultRecord, UserTurn, paired_results
from agent.policies.llm.unavailable import REFUSALS, refusal_ask, unavailable_ask
from agent.policies.llm.user_turn import build_user_turn
from prompts import load_prompt

MARK_KEY = "llm_transcript"
INTRO = (
    "Work towards the goal in the state document. The current state document is at the end of the "
    "latest message; earlier turns of this conversation may have been folded into its findings."
)
NO_TRANSCRIPT = (
    "This run was resumed from the state document alone: the earlier conversation is not "
    "available ({reason}). Rebuild your picture from the state document (tasks, findings, "
    "processes, next steps) and verify anything that may have changed before acting on it."
)
NO_TOOL_CALL = (
    "Your last reply called no tool. Continue with the next tool call; call ask_human only if "
    "truly blocked (with evidence), or finish if the goal is met."
)
CUT_OFF = "Your last reply was cut off at the output token limit; keep replies and tool arguments shorter."
ALONE = (
    "{name} was not acted on: call ask_human or finish alone, in a message of its own, after you "
    "have seen the results of your other calls."
)


class LlmPolicy:
    name = "llm"

    def __init__(
        self,
        settings: LlmSettings,
        provider: Provider,
        *,
        system_prompt: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Callable[[int, float, str], None] | None = None,
    ) -> None:
        self.settings, self.provider = settings, provider
        self.system_prompt = system_prompt if system_prompt is not None else load_prompt(settings.prompt_name)
        self.price = price_for(provider.model, settings.prices)
        self._sleep, self._on_retry = sleep, on_retry
        self.window: list[AssistantTurn | UserTurn] = []
        self._window_start = 0  # index of the window's first turn in the transcript
        self._transcript: Transcript | None = None
        self._state_dir: Path | None = None
        self._call_ids: set[str] = set()  # every call id of this run seen so far (ids must stay unique)

    def decide(self, view: PolicyView) -> Decision:
        transcript = self._open_transcript(view)
        self._append(transcript, build_user_turn(self.window, view, self.settings.context.result_max_chars))
        self._compact(transcript, view)
        request = self.build_request(view)
        try:
            reply = call_with_retries(
                lambda: self.provider.complete(request), self.settings.retry, sleep=self._sleep, on_retry=self._on_retry
            )
        except ModelUnavailable as failure:
            self._commit(transcript, view)
            ask = unavailable_ask(failure, self.provider.name, self.provider.model, self.settings.base_url)
            return Decision(thought=failure.message, actions=[ask])
        assistant = AssistantTurn(step=view.state.step, text=reply.text, calls=_unique_ids(reply.calls, self._call_ids))
        self._call_ids.update(call.id for call in assistant.calls)
        self._append(transcript, assistant)
        if not reply.calls and reply.stop_reason in REFUSALS:
            self._commit(transcript, view)
            return Decision(
                thought=reply.text, actions=[refusal_ask(reply, self.provider.name)], usage=self._usage(reply)
            )
        actions, own_results, notes = self._actions(assistant)
        if reply.stop_reason in ("max_tokens", "length"):
            notes.append(CUT_OFF)
        if own_results or notes:
            self._append(transcript, UserTurn(step=view.state.step, results=own_results, notes=notes))
        self._commit(transcript, view)
        return Decision(thought=reply.text, actions=actions, usage=self._usage(reply))

    def build_request(self, view: PolicyView) -> ModelRequest:
        """System prompt, tools, and the window with the fresh state document closing the last turn."""
        turns = paired_results([UserTurn(step=0, notes=[INTRO]), *self.window])
        limit = int(self.settings.context.state_document_max_tokens * self.settings.context.chars_per_token)
        state_text = render_state_document(view.state, view.state_dir, limit)
        last = turns[-1]
        assert isinstance(last, UserTurn)
        closing = f"<state_document>\n{state_text}\n</state_document>"
        turns[-1] = last.model_copy(update={"notes": [*last.notes, closing]})
        return ModelRequest(
            system=self.system_prompt,
            tools=[*view.tool_schemas, *policy_tool_schemas()],
            turns=turns,
            cache_breakpoints=[len(turns) - 2, len(turns) - 4],
        )

    def close(self) -> None:
        self.provider.close()

    def _open_transcript(self, view: PolicyView) -> Transcript:
        if self._transcript is not None and self._state_dir == view.state_dir:
            return self._transcript
        self._transcript, self._state_dir = Transcript(view.state_dir, view.state.run_id), view.state_dir
        loaded = self._transcript.load(_saved_mark(view))
        self.window, self._window_start = loaded.window, loaded.window_start
        self._call_ids = {call.id for turn in self.window if isinstance(turn, AssistantTurn) for call in turn.calls}
        if view.state.step > 0 and not self.window:
            reason = loaded.problem or "no transcript was found"
            note = NO_TRANSCRIPT.format(reason=reason)
            self._append(self._transcript, UserTurn(step=view.state.step, notes=[note]))
        return self._transcript

    def _append(self, transcript: Transcript, turn: AssistantTurn | UserTurn) -> None:
        if isinstance(turn, UserTurn) and not turn.results and not turn.notes:
            return
        self.window.append(turn)
        transcript.append_turn(turn)

    def _compact(self, transcript: Transcript, view: PolicyView) -> None:
        compaction = context.compact(self.window, self.settings.context)
        self.window = compaction.window
        if compaction.folded:
            self._window_start += len(compaction.folded)
            summary, evidence = context.fold_digest(compaction.folded)
            if evidence:  # folding only empty turns teaches nothing worth a finding
                view.state.add_finding(summary, evidence)
            transcript.record_fold(self._window_start, len(compaction.folded), summary)

    def _commit(self, transcript: Transcript, view: PolicyView) -> None:
        """Write this decision's turns, and note in the state how far the transcript goes; the loop saves
        that note together with the decision, so turns past it were never acted on."""
        transcript.flush()
        mark = TranscriptMark(turns=transcript.turns_recorded, window_start=self._window_start)
        view.state.loop.policy_state[MARK_KEY] = mark.model_dump()

    def _actions(self, turn: AssistantTurn) -> tuple[list[Action], list[ToolResultRecord], list[str]]:
        """Actions for the loop, results the policy gives itself, and notes for the next user turn."""
        ordinary = [call for call in turn.calls if call.name not in POLICY_TOOLS]
        special = [call for call in turn.calls if call.name in POLICY_TOOLS]
        actions: list[Action] = [ToolCall(id=call.id, tool=call.name, arguments=call.arguments) for call in ordinary]
        own_results: list[ToolResultRecord] = []
        if special and (ordinary or len(special) > 1):
            own_results = [
                ToolResultRecord(call_id=call.id, name=call.name, is_error=True, content=ALONE.format(name=call.name))
                for call in special
            ]
        elif special:
            outcome: Ask | Finish | str = to_action(special[0])
            if isinstance(outcome, str):
                own_results = [
                    ToolResultRecord(call_id=special[0].id, name=special[0].name, is_error=True, content=outcome)
                ]
            else:
                actions.append(outcome)
        return actions, own_results, [] if turn.calls else [NO_TOOL_CALL]

    def _usage(self, reply: ModelReply) -> ModelUsage:
        tokens = reply.tokens
        return ModelUsage(
            input_tokens=tokens.input_tokens,
            output_tokens=tokens.output_tokens,
            cached_input_tokens=tokens.cache_read_tokens,
            cost_usd=cost_usd(tokens, self.price),
            model_calls=1,
        )


def _saved_mark(view: PolicyView) -> TranscriptMark | None:
    try:
        return TranscriptMark.model_validate(view.state.loop.policy_state[MARK_KEY])
    except (KeyError, ValidationError):
        return None


def _unique_ids(calls: list[ToolCallRecord], known: set[str]) -> list[ToolCallRecord]:
    """Some OpenAI-compatible servers send empty ids, or the same ids every turn, but every result, journal
    record and transcript entry is matched by id: give such calls a fresh one (the conversation sent back
    carries the new id, which both APIs accept)."""
    seen = set(known)
    unique: list[ToolCallRecord] = []
    for call in calls:
        call_id = call.id
        if not call_id or call_id in seen:
            call_id = f"call_{uuid.uuid4().hex[:20]}"
        seen.add(call_id)
        unique.append(call.model_copy(update={"id": call_id}))
    return unique
