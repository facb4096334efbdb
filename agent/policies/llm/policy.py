"""The LLM policy: one model call per decision, tools in three wire formats, a bounded context.

Each :meth:`LlmPolicy.decide` answers the model's previous tool calls (one result per call, by id),
compacts the window if it grew past its budget (folded turns become a digest in the state document),
closes the new user turn with the state document (whole, or what changed since the whole one the window
holds), sends system prompt + tools + window, and maps the reply to actions. The conversation is
append-only between compactions, so the provider's prompt cache holds and the model's thinking (or
reasoning items) can be sent back unchanged; a compaction, a resume or a switch of model drops the
thinking that no longer matches, after it was recorded in the transcript and the decision's thought.
When the model API cannot be reached, even after retries, the decision is an :class:`Ask` explaining
what failed; the policy never raises for an API failure.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from agent.actions import Action, Ask, Decision, Finish, ModelUsage, ToolCall
from agent.policies.base import PolicyView
from agent.policies.llm import context
from agent.policies.llm.budget import ContextBudget
from agent.policies.llm.builtin_tools import POLICY_TOOLS, policy_tool_schemas, to_action
from agent.policies.llm.call_ids import unique_ids
from agent.policies.llm.models import is_official_openai
from agent.policies.llm.pricing import cost_usd, price_for
from agent.policies.llm.reply import ModelReply, ModelRequest, ModelUnavailable, Provider
from agent.policies.llm.retry import call_with_retries
from agent.policies.llm.settings import ContextSettings, LlmSettings
from agent.policies.llm.state_updates import StateTracker
from agent.policies.llm.state_view import DIGESTS_KEY, state_sections
from agent.policies.llm.text_tool_calls import parser_ask_text, written_tool_call
from agent.policies.llm.transcript import Transcript, TranscriptMark
from agent.policies.llm.turns import AssistantTurn, ToolResultRecord, UserTurn, paired_results
from agent.policies.llm.unavailable import context_exceeded, refusal_ask, unavailable_ask
from agent.policies.llm.user_turn import build_user_turn
from prompts import load_prompt

MARK_KEY = "llm_transcript"
MAX_DIGESTS = 20
INTRO = (
    "Work towards the goal in the state document. The state document closes this message; later "
    "messages carry what changed in it. Earlier turns of this conversation may have been folded into "
    "its digests."
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
REPLAYABLE = ("thinking", "redacted_thinking", "reasoning_item")


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
        local = provider.name == "openai" and not is_official_openai(settings.base_url)
        self.price = price_for(provider.model, settings.prices, local=local)
        self.source = f"{provider.wire}:{provider.model}"
        self.budget = ContextBudget(settings, provider)
        self._sleep, self._on_retry = sleep, on_retry
        self.window: list[AssistantTurn | UserTurn] = []
        self._window_start = 0  # index of the window's first turn in the transcript
        self._transcript: Transcript | None = None
        self._state_dir: Path | None = None
        self._call_ids: set[str] = set()  # every call id of this run seen so far (ids must stay unique)
        self._tracker = StateTracker()

    def decide(self, view: PolicyView) -> Decision:
        transcript = self._open_transcript(view)
        self.window.append(build_user_turn(self.window, view, self.settings.context.result_max_chars))
        self._compact(transcript, view, self.budget.settings(view.tool_schemas, self.system_prompt))
        reply = self._ask_model(transcript, view)
        if isinstance(reply, ModelUnavailable):
            transcript.append_turn(self.window[-1])
            self._commit(transcript, view)
            ask = unavailable_ask(reply, self.provider.name, self.provider.model, self.settings.base_url)
            return Decision(thought=reply.message, actions=[ask])
        transcript.append_turn(self.window[-1])
        assistant = AssistantTurn(
            step=view.state.step,
            text=reply.text,
            reasoning=reply.reasoning,
            calls=unique_ids(reply.calls, self._call_ids),
            source=self.source,
        )
        self._call_ids.update(call.id for call in assistant.calls)
        self._append(transcript, assistant)
        special = self._special_ask(assistant, reply, view)
        if special is not None:
            self._commit(transcript, view)
            return Decision(thought=assistant.thought, actions=[special], usage=self._usage(reply))
        actions, own_results, notes = self._actions(assistant)
        if reply.stop_reason in ("max_tokens", "length"):
            notes.append(CUT_OFF)
        if own_results or notes:
            self._append(transcript, UserTurn(step=view.state.step, results=own_results, notes=notes))
        self._commit(transcript, view)
        return Decision(thought=assistant.thought, actions=actions, usage=self._usage(reply))

    def _ask_model(self, transcript: Transcript, view: PolicyView) -> ModelReply | ModelUnavailable:
        """The reply; a context-window overflow (a stop reason or a refusal of the prompt's size) shrinks
        the window and asks again, once per halving, while the window can still shrink."""
        while True:
            request = self.build_request(view)
            try:
                reply = call_with_retries(
                    functools.partial(self.provider.complete, request),
                    self.settings.retry,
                    sleep=self._sleep,
                    on_retry=self._on_retry,
                )
            except ModelUnavailable as failure:
                if context_exceeded(failure) and self._shrink(transcript, view):
                    continue
                return failure
            if reply.stop_reason == "model_context_window_exceeded" and self._shrink(transcript, view):
                continue
            self.budget.observe(request, reply.tokens.input_tokens)
            return reply

    def _shrink(self, transcript: Transcript, view: PolicyView) -> bool:
        """Halve the budget and compact again; False once the budget cannot shrink any further."""
        if not self.budget.shrinkable():
            return False
        current = self.budget.settings(view.tool_schemas, self.system_prompt)
        self.budget.halve(context.window_tokens(self.window, current))
        self._tracker.rollback()
        self._compact(transcript, view, self.budget.settings(view.tool_schemas, self.system_prompt))
        return True

    def build_request(self, view: PolicyView) -> ModelRequest:
        """System prompt, tools, and the window (whose last user turn closes with the state document);
        reasoning is replayed only to the wire and model that produced it."""
        window = [
            turn.model_copy(update={"reasoning": []})
            if isinstance(turn, AssistantTurn) and turn.reasoning and turn.source != self.source
            else turn
            for turn in self.window
        ]
        turns = paired_results([UserTurn(step=0, notes=[INTRO]), *window])
        return ModelRequest(
            system=self.system_prompt,
            tools=[*view.tool_schemas, *policy_tool_schemas()],
            turns=turns,
            cache_breakpoints=[len(turns) - 2, len(turns) - 4],
            cache_key=view.state.run_id,
        )

    def close(self) -> None:
        self.provider.close()

    def _open_transcript(self, view: PolicyView) -> Transcript:
        if self._transcript is not None and self._state_dir == view.state_dir:
            return self._transcript
        self._transcript, self._state_dir = Transcript(view.state_dir, view.state.run_id), view.state_dir
        loaded = self._transcript.load(_saved_mark(view))
        # What was pruned before the restart is not in the transcript, so the conversation sent next is
        # not the one the saved thinking was produced under: drop it (its text is in the transcript).
        self.window, self._window_start = _without_replay(loaded.window), loaded.window_start
        self._tracker.forget()
        self._call_ids = {call.id for turn in self.window if isinstance(turn, AssistantTurn) for call in turn.calls}
        if view.state.step > 0 and not self.window:
            reason = loaded.problem or "no transcript was found"
            self._append(self._transcript, UserTurn(step=view.state.step, notes=[NO_TRANSCRIPT.format(reason=reason)]))
        return self._transcript

    def _append(self, transcript: Transcript, turn: AssistantTurn | UserTurn) -> None:
        if isinstance(turn, UserTurn) and not turn.results and not turn.notes:
            return
        self.window.append(turn)
        transcript.append_turn(turn)

    def _compact(self, transcript: Transcript, view: PolicyView, settings: ContextSettings) -> None:
        """Compact the window (its last turn is the new, unsent user turn) and close that turn with the
        state document: whole when the window holds no whole one, else what changed since."""
        compaction = context.compact(self.window, settings)
        self.window = compaction.window
        if compaction.edited:
            self.window = _without_replay(self.window)
        if compaction.folded:
            self._window_start += len(compaction.folded)
            summary, evidence = context.fold_digest(compaction.folded)
            if evidence:  # folding only empty turns teaches nothing worth a digest
                digests = list(view.state.loop.policy_state.get(DIGESTS_KEY) or [])
                digests.append({"summary": summary, "evidence": evidence})
                view.state.loop.policy_state[DIGESTS_KEY] = digests[-MAX_DIGESTS:]
            transcript.record_fold(self._window_start, len(compaction.folded), summary)
        whole = not any(isinstance(turn, UserTurn) and turn.state_full for turn in self.window[:-1])
        limit = int(self.settings.context.state_document_max_tokens * settings.chars_per_token)
        text, full = self._tracker.part(state_sections(view.state, view.state_dir, limit), whole)
        last = self.window[-1]
        assert isinstance(last, UserTurn)
        self.window[-1] = last.model_copy(update={"state": text, "state_full": full})

    def _commit(self, transcript: Transcript, view: PolicyView) -> None:
        """Write this decision's turns, and note in the state how far the transcript goes; the loop saves
        that note together with the decision, so turns past it were never acted on."""
        transcript.flush()
        mark = TranscriptMark(turns=transcript.turns_recorded, window_start=self._window_start)
        view.state.loop.policy_state[MARK_KEY] = mark.model_dump()

    def _special_ask(self, turn: AssistantTurn, reply: ModelReply, view: PolicyView) -> Ask | None:
        """A question instead of actions: the model refused, or wrote its tool calls as text."""
        if turn.calls:
            return None
        if reply.stop_reason in ("refusal", "content_filter") or reply.refusal_category:
            return refusal_ask(reply, self.provider.name)
        names = [str(schema.get("name", "")) for schema in view.tool_schemas] + list(POLICY_TOOLS)
        markup = written_tool_call(reply.text, names)
        if markup is None:
            return None
        question, hypothesis = parser_ask_text(markup, self.settings.base_url, self.provider.model)
        return Ask(
            question=question,
            context="The model tried to call a tool; the server did not parse it.",
            evidence=[f"model reply: {' '.join(reply.text.split())[:400]}"],
            hypothesis=hypothesis,
            options=["restart the server with its tool-call parser, then resume", "switch model"],
            question_kind="model_unavailable",
        )

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


def _without_replay(window: list[AssistantTurn | UserTurn]) -> list[AssistantTurn | UserTurn]:
    """The window without reasoning that must match what came before it (thinking, reasoning items)."""
    return [
        turn.model_copy(update={"reasoning": [record for record in turn.reasoning if record.kind not in REPLAYABLE]})
        if isinstance(turn, AssistantTurn) and turn.reasoning
        else turn
        for turn in window
    ]


def _saved_mark(view: PolicyView) -> TranscriptMark | None:
    try:
        return TranscriptMark.model_validate(view.state.loop.policy_state[MARK_KEY])
    except (KeyError, ValidationError):
        return None
