"""Start-up milestone patterns per engine and release, made from the log templates in the release data.

A template such as ``rank %s in world size %s is assigned as DP rank %s, ...`` becomes a regular
expression with each field (``%s``, ``%.2f``, ``{}``) matching any text. For a release that was not
read, the patterns of every read release of that engine are used. Debug-level lines are left out:
engines print them only at debug log level.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from engine_facts.release_facts import LogFact, load_facts, release_view
from engine_facts.versions import parse_release

STAGES = {
    "distributed_init": "distributed_init",
    "weights_begin": "weights",
    "weights_progress": "weights",
    "weights_end": "weights_done",
    "kv_cache": "kv_cache",
    "cuda_graph_begin": "cuda_graph",
    "cuda_graph_end": "cuda_graph_done",
    "ready": "ready",
}
MESSAGES = {
    "distributed_init": "initialising torch.distributed / NCCL",
    "weights": "loading weights",
    "weights_done": "weights loaded",
    "kv_cache": "KV cache allocated",
    "cuda_graph": "capturing CUDA graphs",
    "cuda_graph_done": "CUDA graphs captured",
    "ready": "ready line printed",
}
_FIELD = re.compile(r"\{\}|%[-+ #0]*\d*(?:\.\d+)?[sdfirxge%]")


@dataclass(frozen=True)
class Milestone:
    stage: str
    regex: re.Pattern[str]
    template: str

    @property
    def message(self) -> str:
        return MESSAGES[self.stage]


def template_regex(template: str) -> re.Pattern[str]:
    """The template with its literal parts escaped and each field matching any text (lazily)."""
    parts = _FIELD.split(template)
    body = ".*?".join(re.escape(part) for part in parts)
    return re.compile(body.rstrip())


def _usable(fact: LogFact) -> bool:
    return fact.level != "debug" and len(_FIELD.sub("", fact.text).strip()) >= 8


@functools.cache
def milestones(engine: str, version: str | None) -> tuple[Milestone, ...]:
    """The milestone patterns of this release (exact), else of all read releases of the engine."""
    release = parse_release(version)
    view = release_view(engine, release) if release else None
    if view is not None:
        facts = [(name, fact) for name, entries in view.logs.items() for fact in entries]
    else:
        engine_facts = load_facts().engines.get(engine)
        facts = [
            (name, fact) for name, entries in (engine_facts.logs.items() if engine_facts else []) for fact in entries
        ]
    found: dict[str, Milestone] = {}
    for name, fact in facts:
        if name in STAGES and _usable(fact):
            found.setdefault(fact.text, Milestone(STAGES[name], template_regex(fact.text), fact.text))
    return tuple(sorted(found.values(), key=lambda item: (item.stage, item.template)))


def template_for(engine: str, version: str | None, milestone: str, containing: str = "") -> str | None:
    """One template of a milestone in this release (used by the twin to print the real wording)."""
    release = parse_release(version)
    view = release_view(engine, release) if release else None
    if view is None:
        return None
    texts = sorted(fact.text for fact in view.logs.get(milestone, []) if _usable(fact) and containing in fact.text)
    return texts[0] if texts else None


def fill(template: str, *values: object) -> str:
    """The template with its fields replaced by the values in order (missing ones by 0)."""
    supply = iter(values)
    return _FIELD.sub(lambda match: "%" if match.group(0) == "%%" else str(next(supply, 0)), template)


def fill_labeled(template: str, labels: Mapping[str, object]) -> str:
    """The template with each field replaced by the value of the label written just before it.

    ``fill_labeled("rank %s in world size %s", {"rank": 3, "world size": 8})`` gives ``rank 3 in world size 8``;
    a field with no known label before it gets ``0``. The label is the phrase since the last separator
    (``DP rank`` is not ``rank``); a label of two or more words may end a longer phrase (``in world size``).
    The label ``""`` fills a field that opens the template.
    """
    pieces: list[str] = []
    position = 0
    for match in _FIELD.finditer(template):
        before = template[position : match.start()]
        pieces.append(before)
        phrase = re.split(r"[,.;(]\s*", before.rstrip(" :="))[-1].strip()
        label = (
            phrase
            if phrase in labels
            else next(
                (key for key in sorted(labels, key=len, reverse=True) if " " in key and phrase.endswith(" " + key)),
                None,
            )
        )
        pieces.append("%" if match.group(0) == "%%" else str(labels[label]) if label is not None else "0")
        position = match.end()
    pieces.append(template[position:])
    return "".join(pieces)
