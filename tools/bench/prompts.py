"""Synthetic requests of a given size, built locally: no tokenizer, no dataset download.

``words`` prompts are random common English words, each one token (with its leading space) in the
usual BPE vocabularies, so N words is close to N prompt tokens; the exact count comes back in the
server's ``usage`` and is what the results report. ``token_ids`` prompts (completions endpoint
only) send random ids directly, like sglang.bench_serving's ``random-ids`` dataset. Every prompt
starts differently, so the prefix cache cannot serve one request from another.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal

EndpointKind = Literal["chat", "completions"]
PromptStyle = Literal["words", "token_ids"]

WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "that",
    "with",
    "as",
    "on",
    "by",
    "he",
    "at",
    "from",
    "his",
    "it",
    "an",
    "were",
    "are",
    "which",
    "this",
    "be",
    "or",
    "has",
    "had",
    "not",
    "first",
    "one",
    "their",
    "its",
    "new",
    "after",
    "but",
    "who",
    "they",
    "have",
    "her",
    "she",
    "two",
    "been",
    "other",
    "when",
    "there",
    "all",
    "during",
    "into",
    "school",
    "time",
    "may",
    "years",
    "more",
    "most",
    "only",
    "over",
    "city",
    "some",
    "world",
    "would",
    "where",
    "later",
    "up",
    "such",
    "used",
    "many",
    "can",
    "state",
    "about",
    "national",
    "out",
    "known",
    "university",
    "united",
    "then",
    "made",
    "film",
    "since",
    "year",
    "under",
    "while",
    "also",
    "part",
    "team",
    "just",
    "both",
    "new",
    "river",
    "being",
    "well",
    "through",
    "three",
    "called",
    "season",
    "several",
    "including",
    "high",
    "four",
    "game",
    "number",
    "early",
    "people",
    "most",
    "will",
    "back",
    "these",
    "war",
    "south",
    "north",
    "west",
    "east",
    "own",
    "between",
    "like",
    "house",
    "music",
    "album",
    "line",
    "children",
    "life",
    "work",
    "home",
    "group",
    "family",
    "water",
    "long",
    "place",
    "great",
    "day",
    "old",
    "small",
    "large",
    "light",
    "green",
    "blue",
    "red",
    "black",
    "white",
    "open",
    "park",
    "road",
    "book",
    "story",
    "order",
    "power",
    "field",
    "local",
    "public",
    "service",
    "point",
    "west",
    "member",
    "name",
)

# Ids well inside every common vocabulary and below the special-token ranges.
TOKEN_ID_RANGE = (1000, 20000)

PATHS: dict[EndpointKind, str] = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


def make_prompt(rng: random.Random, length: int, index: int) -> str:
    words = [f"{index}:", *rng.choices(WORDS, k=max(length - 1, 0))]
    return " ".join(words)


def request_body(
    *,
    endpoint: EndpointKind,
    model: str,
    prompt: str | list[int],
    max_tokens: int,
    ignore_eos: bool,
    temperature: float,
    extra_body: dict[str, Any],
) -> dict[str, Any]:
    """An OpenAI-compatible streaming request; ``ignore_eos`` is understood by SGLang and vLLM."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if endpoint == "chat":
        if not isinstance(prompt, str):
            raise ValueError("token-id prompts need the completions endpoint")
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if ignore_eos:
        body["ignore_eos"] = True
    body.update(extra_body)
    return body


def build_requests(
    *,
    count: int,
    endpoint: EndpointKind,
    model: str,
    input_len: int,
    output_len: int,
    style: PromptStyle,
    ignore_eos: bool,
    temperature: float,
    extra_body: dict[str, Any],
    seed: int,
    encode: Callable[[dict[str, Any]], bytes],
    frame: Callable[[bytes], bytes],
) -> list[bytes]:
    """Wire-ready request bytes, built before the clock starts so the client does no work per request."""
    if style == "token_ids" and endpoint != "completions":
        raise ValueError("prompt_style 'token_ids' needs endpoint 'completions'")
    rng = random.Random(seed)
    requests = []
    for index in range(count):
        prompt: str | list[int] = (
            make_prompt(rng, input_len, index)
            if style == "words"
            else [rng.randrange(*TOKEN_ID_RANGE) for _ in range(input_len)]
        )
        body = request_body(
            endpoint=endpoint,
            model=model,
            prompt=prompt,
            max_tokens=output_len,
            ignore_eos=ignore_eos,
            temperature=temperature,
            extra_body=extra_body,
        )
        requests.append(frame(encode(body)))
    return requests
