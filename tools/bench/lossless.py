"""The lossless gate: speculative decoding must not change greedy output.

EAGLE, n-gram and MTP speculation verify every drafted token against the target, so with greedy decoding the
served text must be the target's own, whatever the drafter guesses. The gate asks a few fixed prompts with
greedy decoding (temperature 0, a fixed length, end-of-sequence ignored) on the baseline, keeps the outputs,
and asks the same prompts again once a speculative configuration is up. This works where "is the answer
sensible" cannot: a model with random weights has a well-defined greedy output too.

Tolerance for numerics: verification scores several positions in one batch, so its logits can differ from
the baseline's in the last bits, and a near-tie between two tokens may flip; from there the texts part. A
prompt agrees when the outputs share at least ``min_prefix_fraction`` of the baseline's text (default 0.75:
a flip is allowed only in the last quarter). Any prompt that parts earlier fails the gate: the configuration
changes the output and is wrong, however fast it is. A broken configuration parts at the first drafted
tokens.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tools.bench.client import Connection, Endpoint, build_encoder, stream
from tools.bench.prompts import PATHS, request_body

PROMPTS = [
    "The operator opened the console",
    "List the steps to restart a service:",
    "In the morning the weather report said",
    "def fibonacci(n):",
]
DEFAULT_MAX_TOKENS = 48
DEFAULT_MIN_PREFIX_FRACTION = 0.75


class PromptAgreement(BaseModel):
    prompt: str
    agreement: float  # shared prefix / baseline length, 1.0 when identical
    first_difference: int | None  # character where the texts part, None when identical
    reference: str
    output: str


class LosslessVerdict(BaseModel):
    compared: bool  # False: outputs recorded as the reference (no reference given)
    passed: bool
    min_prefix_fraction: float
    outputs: list[str]
    prompts: list[PromptAgreement] = Field(default_factory=list)
    summary: str


def shared_prefix(first: str, second: str) -> int:
    length = 0
    for left, right in zip(first, second, strict=False):
        if left != right:
            break
        length += 1
    return length


def compare(reference: list[str], outputs: list[str], min_prefix_fraction: float) -> LosslessVerdict:
    """Each output against the baseline's for the same prompt (the lists are in the order of ``PROMPTS``)."""
    agreements = []
    for prompt, expected, got in zip(PROMPTS, reference, outputs, strict=True):
        shared = shared_prefix(expected, got)
        identical = expected == got
        agreements.append(
            PromptAgreement(
                prompt=prompt,
                agreement=1.0 if identical else round(shared / max(len(expected), 1), 3),
                first_difference=None if identical else shared,
                reference=expected[:200],
                output=got[:200],
            )
        )
    parted = [item for item in agreements if item.agreement < min_prefix_fraction]
    identical_count = sum(item.first_difference is None for item in agreements)
    if parted:
        worst = min(parted, key=lambda item: item.agreement)
        summary = (
            f"lossless gate FAILED: {len(parted)} of {len(agreements)} greedy outputs differ from the baseline's "
            f"before {min_prefix_fraction:.0%} of their text (worst: {worst.prompt!r} parts at character "
            f"{worst.first_difference} of {len(worst.reference)}); the configuration changes the output"
        )
    elif identical_count == len(agreements):
        summary = f"lossless gate passed: all {len(agreements)} greedy outputs identical to the baseline's"
    else:
        summary = (
            f"lossless gate passed: {identical_count} of {len(agreements)} greedy outputs identical to the baseline's, "
            f"the rest agree on at least {min_prefix_fraction:.0%} of their text (a late flip: numerics)"
        )
    return LosslessVerdict(
        compared=True,
        passed=not parted,
        min_prefix_fraction=min_prefix_fraction,
        outputs=outputs,
        prompts=agreements,
        summary=summary,
    )


async def greedy_outputs(base_url: str, model: str, max_tokens: int, timeout: float = 300.0) -> list[str]:
    """The server's greedy completion of each prompt, asked one at a time."""
    endpoint = Endpoint.parse(base_url)
    connection = Connection(endpoint)
    encode = build_encoder()
    outputs = []
    try:
        for prompt in PROMPTS:
            body = request_body(
                endpoint="completions",
                model=model,
                prompt=prompt,
                max_tokens=max_tokens,
                ignore_eos=True,
                temperature=0.0,
                extra_body={"seed": 0},
            )
            request = endpoint.request_bytes("POST", PATHS["completions"], encode(body))
            outcome = await stream(connection, request, timeout=timeout, collect_text=True)
            if outcome.error is not None:
                raise LosslessRequestFailed(f"{prompt!r}: {outcome.error}")
            outputs.append(outcome.text)
    finally:
        connection.close()
    return outputs


class LosslessRequestFailed(RuntimeError):
    """A gate prompt got no answer: the comparison cannot be made."""
