"""The questions the run stops on when the model cannot be used: the API failed (after retries, or
refused the request outright), or the model declined to continue."""

from __future__ import annotations

import re

from agent.actions import Ask
from agent.policies.llm.reply import ModelReply, ModelUnavailable

MAX_EVIDENCE_LINES = 10
# Stop reasons meaning the model would not answer (Anthropic: refusal; OpenAI: content_filter).
REFUSALS = ("refusal", "content_filter")
# How APIs and servers say the prompt is too long: OpenAI's error code, Anthropic's "prompt is too long",
# vLLM's "maximum context length is", SGLang's "longer than the model's context length".
CONTEXT_EXCEEDED = re.compile(
    r"context_length_exceeded|prompt is too long|maximum context length|"
    r"context length|context window",
    re.IGNORECASE,
)


def context_exceeded(failure: ModelUnavailable) -> bool:
    """True when the request was refused because the prompt does not fit the model's context window."""
    return failure.status_code in (400, 413) and any(CONTEXT_EXCEEDED.search(line) for line in failure.errors)


def _hypothesis(failure: ModelUnavailable, provider: str) -> str:
    code = failure.status_code
    if code in (401, 403):
        return f"The {provider} API key is missing, invalid, or has no access to this model."
    if code == 404:
        return "The model name or the base URL is wrong (the server does not know this model or path)."
    if code == 400 and "/v1/responses" in failure.message:
        return (
            "This model takes function tools only on the Responses API; use --wire responses (or "
            'llm.wire = "responses"), or set the reasoning effort to none.'
        )
    if code in (400, 413, 422):
        return (
            "The server rejected the request itself: the prompt may exceed the model's context window, "
            "or the server does not support something the request used (tool calling, streaming usage)."
        )
    if code == 429:
        return "The rate limit or the account's quota is exhausted; waiting or raising the quota helps."
    return (
        f"The {provider} API is overloaded, failing or unreachable; the run itself is fine and continues "
        "as soon as the API answers."
    )


def unavailable_ask(failure: ModelUnavailable, provider: str, model: str, base_url: str | None) -> Ask:
    where = f"{provider} model {model}" + (f" at {base_url}" if base_url else "")
    if failure.retryable:
        question = (
            f"The {where} did not answer ({failure.message}). Should I retry now, or will you change "
            "the provider or model first?"
        )
    else:
        question = f"The {where} refused the request ({failure.message}). How should I proceed?"
    return Ask(
        question=question,
        context=(
            "The agent cannot choose its next step without the model. The state document and the "
            "conversation are saved; `agent resume` continues exactly where the run stopped."
        ),
        evidence=failure.errors[-MAX_EVIDENCE_LINES:],
        options=[
            "retry now (agent resume)",
            "change the provider, model or base URL in the configuration, then resume",
            "stop the run",
        ],
        hypothesis=_hypothesis(failure, provider),
        question_kind="model_unavailable",
    )


def refusal_ask(reply: ModelReply, provider: str) -> Ask:
    said = " ".join(reply.text.split())[:500]
    category = f", category: {reply.refusal_category}" if reply.refusal_category else ""
    evidence = [f"model said: {said}"] if said else []
    if reply.refusal_explanation and reply.refusal_explanation not in said:
        evidence.append(f"explanation: {' '.join(reply.refusal_explanation.split())[:500]}")
    return Ask(
        question=(
            f"The {provider} model declined to continue (stop reason: {reply.stop_reason}{category}). "
            "How should I proceed?"
        ),
        context="A refusal is not retried: asking again with the same conversation gets the same answer.",
        evidence=evidence,
        options=["rephrase the goal or answer with guidance, then resume", "switch model, then resume", "stop the run"],
        hypothesis="Something in the goal, a tool output or a log excerpt tripped the provider's safety filter.",
        question_kind="model_refusal",
    )
