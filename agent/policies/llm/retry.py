"""Retries for model API calls: which failures are transient, how long to wait, when to give up.

The SDKs' own retries are off (``max_retries=0``) so that this module is the single place that decides.
Transient: HTTP 408/409/429, every 5xx (529 "overloaded" included), timeouts, dropped connections,
streams cut mid-message and error events inside a stream. Waits honour ``retry-after-ms`` and
``retry-after``; otherwise they grow exponentially with jitter. Giving up raises :class:`ModelUnavailable`.
"""

from __future__ import annotations

import email.utils
import importlib
import random
import time
from collections.abc import Callable
from typing import TypeVar

import anthropic
import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.wait import wait_base

from agent.policies.llm.reply import IncompleteResponse, ModelUnavailable
from agent.policies.llm.settings import RetrySettings

ResultT = TypeVar("ResultT")

RETRYABLE_STATUSES = {408, 409, 425, 429}
# Error types that Anthropic sends inside a 200 stream; they mean "try again", not "your request is wrong".
RETRYABLE_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


def _transport_errors() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(module_name).TransportError)
        except ImportError:
            continue
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()
# Everything a provider call may raise for API or network reasons; anything else is a bug and propagates.
API_FAILURES: tuple[type[BaseException], ...] = (
    anthropic.AnthropicError,
    openai.OpenAIError,
    IncompleteResponse,
    *TRANSPORT_ERRORS,
)


def status_code(error: BaseException) -> int | None:
    code = getattr(error, "status_code", None)
    return code if isinstance(code, int) else None


def _body_error_type(error: BaseException) -> str | None:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("type"), str):
            return str(inner["type"])
    return None


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, IncompleteResponse | anthropic.APIConnectionError | openai.APIConnectionError):
        return True
    if TRANSPORT_ERRORS and isinstance(error, TRANSPORT_ERRORS):
        return True
    code = status_code(error)
    if code is not None:
        return code in RETRYABLE_STATUSES or code >= 500 or _body_error_type(error) in RETRYABLE_ERROR_TYPES
    # An OpenAI error event inside a stream has no status; the request itself was accepted.
    return isinstance(error, openai.APIError) and not isinstance(error, openai.APIResponseValidationError)


def retry_after_seconds(error: BaseException | None) -> float | None:
    """The wait a server asked for, from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(float(milliseconds) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def describe(error: BaseException) -> str:
    code = status_code(error)
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    prefix = f"HTTP {code}" if code is not None else type(error).__name__
    return f"{prefix}: {' '.join(str(message).split())[:300]}"


class BackoffWait(wait_base):
    """The server's retry-after when it gave one, else exponential backoff with equal jitter."""

    def __init__(self, settings: RetrySettings) -> None:
        self.settings = settings

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        hinted = retry_after_seconds(outcome.exception() if outcome is not None else None)
        if hinted is not None:
            return min(hinted, self.settings.max_retry_after_seconds)
        growth = 2.0 ** (retry_state.attempt_number - 1)
        ceiling = min(self.settings.max_backoff_seconds, self.settings.initial_backoff_seconds * growth)
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def call_with_retries(
    function: Callable[[], ResultT],
    settings: RetrySettings,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, float, str], None] | None = None,
) -> ResultT:
    """Call ``function`` until it succeeds, a failure is not transient, or the attempt/time bounds run out."""
    errors: list[str] = []
    started = time.monotonic()

    def attempt() -> ResultT:
        try:
            return function()
        except API_FAILURES as error:
            errors.append(describe(error))
            raise

    def before_sleep(retry_state: RetryCallState) -> None:
        if on_retry is not None:
            on_retry(retry_state.attempt_number, retry_state.upcoming_sleep, errors[-1] if errors else "")

    retrying: Retrying = Retrying(
        stop=stop_after_attempt(settings.max_attempts) | stop_before_delay(settings.max_total_seconds),
        wait=BackoffWait(settings),
        retry=retry_if_exception(is_retryable),
        sleep=sleep,
        reraise=True,
        before_sleep=before_sleep,
    )
    try:
        return retrying(attempt)
    except API_FAILURES as error:
        elapsed = time.monotonic() - started
        transient = is_retryable(error)
        verdict = (
            f"gave up after {len(errors)} attempt(s) in {elapsed:.1f} s" if transient else "the request was refused"
        )
        last = errors[-1] if errors else describe(error)
        raise ModelUnavailable(
            f"{verdict}: {last}",
            attempts=len(errors),
            elapsed_seconds=elapsed,
            errors=errors,
            retryable=transient,
            status_code=status_code(error),
        ) from error
