"""Requests a serving vLLM refuses one by one (HTTP 4xx) while it goes on serving, for the ``serve_refused`` cases."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

LONG_PROMPT_WORDS = 3000  # far beyond the cases' --max-model-len 1024


def api_key(arguments: list[str]) -> str:
    """The last ``--api-key`` of the command line ('' when none)."""
    keys = [arguments[at + 1] for at, argument in enumerate(arguments[:-1]) if argument == "--api-key"]
    return keys[-1] if keys else ""


def headers(key: str) -> dict[str, str]:
    """JSON content, and ``key`` as bearer token when given."""
    return {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}


def post(url: str, body: dict[str, object], key: str = "", timeout: float = 120.0) -> int:
    """POST ``body`` as JSON (with ``key`` as bearer token when given), read the answer; its HTTP status."""
    request = urllib.request.Request(url, json.dumps(body).encode(), headers(key))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        error.read()
        return int(error.code)


def refused_requests(base_url: str, model: str, arguments: list[str]) -> str:
    """Send requests the server should refuse; 'what status, ...' as answered."""
    key = api_key(arguments)
    completion = f"{base_url}/v1/completions"
    short = {"model": model, "prompt": "The operator opened the console", "max_tokens": 8, "temperature": 0}
    attempts: list[tuple[str, dict[str, object], str]] = []
    if key:
        attempts.append(("no api key", short, ""))
    attempts += [
        ("unknown model", {**short, "model": "no-such-model"}, key),
        ("5 logprobs", {**short, "logprobs": 5}, key),
        ("prompt longer than the context", {**short, "prompt": "word " * LONG_PROMPT_WORDS}, key),
        ("max_tokens beyond the context", {**short, "max_tokens": 100_000}, key),
    ]
    return ", ".join(f"{what} {post(completion, body, token)}" for what, body, token in attempts)
