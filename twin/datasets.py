"""Conversation data for drafter training: a generic prompt set, JSONL reading, and how well a data set
matches the simulated target (the share of assistant turns the target itself would have written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from twin import textgen

_QUESTIONS = [
    "How do I {verb} {thing}?",
    "Explain {thing} in simple terms.",
    "What are the trade-offs of {thing}?",
    "Write a short note about {thing}.",
    "Why does {thing} matter when you {verb} it?",
    "Give three tips to {verb} {thing}.",
]
_VERBS = ["optimise", "debug", "deploy", "measure", "design", "test", "document", "scale"]
_THINGS = [
    "a web server",
    "a database index",
    "a neural network",
    "a build pipeline",
    "a cache layer",
    "a message queue",
    "a GPU cluster",
    "a tokenizer",
    "an API gateway",
    "a scheduler",
    "a compiler pass",
    "a backup plan",
    "a load balancer",
    "a search engine",
    "a mobile app",
    "a data warehouse",
]
_HUMAN_REPLIES = [
    "Sure thing! Start small, measure first, and change one thing at a time.",
    "Great question. In my experience the details matter more than the theory here.",
    "It depends a lot on your setup, but usually the simplest approach wins.",
    "Here's how I'd think about it: what fails first, and how would you notice?",
]


def generic_prompts(count: int) -> list[str]:
    prompts = []
    for index in range(count):
        template = _QUESTIONS[index % len(_QUESTIONS)]
        thing = _THINGS[(index // len(_QUESTIONS)) % len(_THINGS)]
        verb = _VERBS[(index * 3) % len(_VERBS)]
        prompt = template.format(verb=verb, thing=thing)
        round_number = index // (len(_QUESTIONS) * len(_THINGS))
        prompts.append(prompt if round_number == 0 else f"{prompt} (case {round_number + 1})")
    return prompts


def generic_records(count: int) -> list[dict[str, Any]]:
    """ShareGPT-like conversations written by people, not by the target."""
    return [
        {
            "id": f"sharegpt-{index:05d}",
            "conversations": [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": _HUMAN_REPLIES[index % len(_HUMAN_REPLIES)]},
            ],
        }
        for index, prompt in enumerate(generic_prompts(count))
    ]


def normalise_turns(record: dict[str, Any]) -> list[dict[str, str]]:
    """Turns as {"role", "content"}; ShareGPT's {"from", "value"} (human/gpt) is accepted too."""
    turns = record.get("conversations") or record.get("messages") or []
    result = []
    for turn in turns if isinstance(turns, list) else []:
        if not isinstance(turn, dict):
            continue
        role = turn.get("role") or {"human": "user", "gpt": "assistant"}.get(str(turn.get("from")), turn.get("from"))
        content = turn.get("content", turn.get("value", ""))
        result.append({"role": str(role), "content": str(content)})
    return result


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not JSON ({error})") from None
        if isinstance(record, dict):
            records.append(record)
    return records


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def alignment_counts(record: dict[str, Any]) -> tuple[int, int]:
    """(assistant turns the simulated target could have written, assistant turns) of one conversation."""
    matched = total = 0
    last_user = None
    for turn in normalise_turns(record):
        if turn["role"] == "user":
            last_user = turn["content"]
        elif turn["role"] == "assistant" and last_user is not None:
            total += 1
            answer = turn["content"].strip()
            if answer and any(candidate.startswith(answer) for candidate in textgen.possible_replies(last_user)):
                matched += 1
    return matched, total


def target_alignment(records: list[dict[str, Any]]) -> float:
    """Share of assistant turns that the simulated target could have produced for the preceding user turn."""
    counts = [alignment_counts(record) for record in records]
    total = sum(count[1] for count in counts)
    return sum(count[0] for count in counts) / total if total else 0.0
