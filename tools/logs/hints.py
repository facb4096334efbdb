"""Engine hints: advice the engine itself printed, turned into machine-usable remedies.

Engines often say what to do: ``Please try to increase --mem-fraction-static``, ``set
--cuda-graph-max-bs to a smaller value (e.g., 16)``, ``Try increasing `gpu_memory_utilization` or
decreasing `max_model_len```, ``Based on the available memory, the estimated maximum model length is
37376``, ``you can use float16 instead ... --dtype=half``, ``export VLLM_WORKER_MULTIPROC_METHOD=spawn``.
:func:`engine_hints` finds such advice in the lines around a failure and returns, for each setting, the
direction the engine asks for, the action in the remedy format of ``signatures.toml`` (launch-config
field names) and the engine's own words as evidence.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from tools.logs.prefixes import split_line

Direction = Literal["increase", "decrease", "set", "enable", "disable"]

_ADVICE = re.compile(
    r"\b(?:[Rr]un with|[Tt]ry|[Pp]lease|[Cc]onsider|[Ss]et|[Uu]se|[Ss]pecify|[Pp]ass"
    r"|[Ii]ncreas\w*|[Dd]ecreas\w*|[Rr]educ\w*|[Ll]ower\w*|[Dd]isable|[Ee]xport|[Yy]ou can"
    r"|[Yy]ou should|must use)\b"
)
_NOT_ADVICE = re.compile(r"^\s*(?:python\S*|vllm serve|sglang serve|docker|\$|#)\s|server_args=|args: Namespace")
_CONDITIONAL = re.compile(r"^\s*If\b|\bif (?:an? )?(?:out-of-memory|OOM)")
_FLAG = re.compile(r"(?P<flag>--[a-z][a-z0-9-]+)(?:(?P<separator>=| )(?P<value>(?![-(])[\w.:/-]*\w))?")
_CONFIG_NAME = re.compile(
    r"`?\b(?P<name>gpu_memory_utilization|max_model_len|max_num_seqs|enforce_eager"
    r"|mem_fraction_static|max_running_requests|cuda_graph_max_bs|swap_space)\b`?"
)
_ENV = re.compile(r"\b(?P<name>(?:VLLM|SGLANG|NCCL|PYTORCH|CUDA|TORCH|RAY)_[A-Z0-9_]+)(?:=(?P<value>[\w.:,=-]+))?")
_MAX_LEN = re.compile(r"estimated maximum model length is (?P<value>\d+)")
_UP = re.compile(r"increas|rais|larger|higher|bigger|more memory", re.IGNORECASE)
_DOWN = re.compile(r"decreas|lower|reduc|smaller|less|shorter", re.IGNORECASE)
_EXAMPLE = re.compile(r"\(e\.g\.,? (?P<value>[\w.]+)")

# Engine flag or config name -> (launch-config field, kind). kind: number fields are adjusted or scaled.
_FIELDS: dict[str, tuple[str, str]] = {
    "--mem-fraction-static": ("mem_fraction", "fraction"),
    "mem_fraction_static": ("mem_fraction", "fraction"),
    "--gpu-memory-utilization": ("mem_fraction", "fraction"),
    "gpu_memory_utilization": ("mem_fraction", "fraction"),
    "--context-length": ("context_length", "count"),
    "--max-model-len": ("context_length", "count"),
    "max_model_len": ("context_length", "count"),
    "--cuda-graph-max-bs": ("cuda_graph_max_bs", "count"),
    "cuda_graph_max_bs": ("cuda_graph_max_bs", "count"),
    "--max-running-requests": ("max_running_requests", "count"),
    "max_running_requests": ("max_running_requests", "count"),
    "--max-num-seqs": ("max_running_requests", "count"),
    "max_num_seqs": ("max_running_requests", "count"),
    "--attention-backend": ("attention_backend", "choice"),
    "--kv-cache-dtype": ("kv_cache_dtype", "choice"),
    "--disable-cuda-graph": ("disable_cuda_graph", "switch"),
    "--enforce-eager": ("disable_cuda_graph", "switch"),
    "enforce_eager": ("disable_cuda_graph", "switch"),
    "--disable-custom-all-reduce": ("disable_custom_all_reduce", "switch"),
    "--trust-remote-code": ("trust_remote_code", "switch"),
    "--enable-p2p-check": ("enable_p2p_check", "switch"),
}
_VERBATIM_FLAGS = {"--dtype"}  # flags without a launch-config field: appended as written
FRACTION_STEP = 0.05
COUNT_FACTOR = 0.5


class EngineHint(BaseModel):
    """One piece of advice from the engine. ``action`` uses the remedy action keys of ``signatures.toml``."""

    setting: str  # the engine's flag, config name or environment variable
    direction: Direction
    value: str | None = None
    action: dict[str, Any] = Field(default_factory=dict)  # empty: advice a person must act on
    evidence: str  # the engine's own words
    line_number: int | None = None


def _direction(sentence: str, setting: str) -> Direction:
    if _FIELDS.get(setting, ("", ""))[1] == "switch":
        return "enable"
    position = sentence.find(setting)
    before = sentence[max(position - 48, 0) : position]
    after = sentence[position + len(setting) : position + len(setting) + 48]
    for context in (before, after):
        if _DOWN.search(context) and not _UP.search(context):
            return "decrease"
        if _UP.search(context) and not _DOWN.search(context):
            return "increase"
    return "set"


def _flag_value(setting: str, separator: str | None, value: str | None) -> str | None:
    """A value written after the flag: after "=" always; after a space only for flags that take one."""
    if value is None or separator is None:
        return None
    if separator == "=" or setting in _VERBATIM_FLAGS or _FIELDS.get(setting, ("", ""))[1] == "choice":
        return value
    return None


def _action(setting: str, direction: Direction, value: str | None) -> dict[str, Any]:
    if setting in _VERBATIM_FLAGS and value:
        return {"add_flags": [setting, value]}
    field_kind = _FIELDS.get(setting)
    if field_kind is None:
        return {}
    name, kind = field_kind
    if kind == "switch":
        return {"set_flag": {name: True}}
    if kind == "choice":
        return {"set_flag": {name: value}} if value else {}
    if kind == "fraction" and direction in ("increase", "decrease"):
        return {"adjust_flag": {name: FRACTION_STEP if direction == "increase" else -FRACTION_STEP}}
    if kind == "count" and direction == "decrease":
        if value and value.isdigit():
            return {"set_flag": {name: int(value)}}
        return {"scale_flag": {name: COUNT_FACTOR}}
    return {}


def _hints_in(text: str, line_number: int | None) -> list[EngineHint]:
    found: list[EngineHint] = []
    evidence = text.strip()
    limit = _MAX_LEN.search(text)
    if limit is not None:
        found.append(
            EngineHint(
                setting="max_model_len",
                direction="decrease",
                value=limit.group("value"),
                action=_action("max_model_len", "decrease", limit.group("value")),
                evidence=evidence,
                line_number=line_number,
            )
        )
    mentions = [
        (match.group("flag"), _flag_value(match.group("flag"), match.group("separator"), match.group("value")))
        for match in _FLAG.finditer(text)
    ]
    mentions += [(match.group("name"), None) for match in _CONFIG_NAME.finditer(text)]
    for setting, value in mentions:
        direction = _direction(text, setting)
        example = _EXAMPLE.search(text[text.find(setting) :])
        if value is None and example is not None and direction == "set":
            value = example.group("value")
        action = _action(setting, direction, value)
        if action:
            found.append(
                EngineHint(
                    setting=setting,
                    direction=direction,
                    value=value,
                    action=action,
                    evidence=evidence,
                    line_number=line_number,
                )
            )
    for match in _ENV.finditer(text):
        if match.group("value"):
            found.append(
                EngineHint(
                    setting=match.group("name"),
                    direction="set",
                    value=match.group("value"),
                    action={"set_env": {match.group("name"): match.group("value")}},
                    evidence=evidence,
                    line_number=line_number,
                )
            )
    return found


def engine_hints(lines: list[str], numbers: list[int | None], indexes: list[int]) -> list[EngineHint]:
    """Advice found on the given lines (indexes into ``lines``), one hint per setting and direction."""
    hints: list[EngineHint] = []
    seen: set[tuple[str, str]] = set()
    for index in indexes:
        parts = split_line(lines[index])
        text = parts.text
        if (
            parts.level in ("INFO", "DEBUG")
            or not _ADVICE.search(text)
            or _NOT_ADVICE.search(text)
            or _CONDITIONAL.search(text)
        ):
            continue
        for hint in _hints_in(text, numbers[index]):
            key = (hint.setting, hint.direction)
            if key not in seen:
                seen.add(key)
                hints.append(hint)
    return hints
