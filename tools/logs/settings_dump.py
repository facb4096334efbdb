"""The settings an engine says it runs with, read from its start-up lines.

A launch that leaves a setting to the engine does not know its value; the engine prints it: SGLang's
``server_args=ServerArgs(mem_fraction_static=0.88, cuda_graph_max_bs=256, ...)``, vLLM's ``non-default
args: {...}`` and ``Initializing a V1 LLM engine (...) with config: ..., max_seq_len=..., ...``. The
values come back under the launch-config names (``tools.engines.config``), so a remedy can start from
the value the engine really used.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tools.hosts.base import Host
from tools.logs.reader import last_frame

HEAD_BYTES = 256 * 1024
_SGLANG_ARGS = re.compile(r"server_args=ServerArgs\((?P<body>.*)\)\s*$")
_VLLM_NON_DEFAULT = re.compile(r"non-default args: (?P<body>\{.*\})\s*$")
_VLLM_CONFIG = re.compile(r"LLM engine \(v[^)]*\) with config: (?P<body>.*)$")
_PAIR = re.compile(r"(?P<name>\w+)=(?P<value>'(?:[^'\\]|\\.)*'|\"[^\"]*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]+)")
NAMES: dict[str, str] = {
    "mem_fraction_static": "mem_fraction",
    "gpu_memory_utilization": "mem_fraction",
    "cuda_graph_max_bs": "cuda_graph_max_bs",
    "cuda_graph_max_bs_decode": "cuda_graph_max_bs",
    "max_cudagraph_capture_size": "cuda_graph_max_bs",
    "max_running_requests": "max_running_requests",
    "max_num_seqs": "max_running_requests",
    "context_length": "context_length",
    "max_model_len": "context_length",
    "max_seq_len": "context_length",
    "attention_backend": "attention_backend",
    "disable_cuda_graph": "disable_cuda_graph",
    "enforce_eager": "disable_cuda_graph",
    "kv_cache_dtype": "kv_cache_dtype",
    "chunked_prefill_size": "chunked_prefill_size",
}


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def _named(pairs: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in pairs.items():
        field = NAMES.get(name)
        if field is not None and value is not None and field not in found:
            found[field] = value
    return found


def engine_settings(lines: list[str]) -> dict[str, Any]:
    """Launch-config field -> the value the engine reports (only settings it printed a value for)."""
    settings: dict[str, Any] = {}
    for line in lines:
        for pattern in (_SGLANG_ARGS, _VLLM_CONFIG):
            match = pattern.search(line)
            if match is not None:
                pairs = {item.group("name"): _literal(item.group("value")) for item in _PAIR.finditer(match["body"])}
                settings = {**_named(pairs), **settings}
        explicit = _VLLM_NON_DEFAULT.search(line)
        if explicit is not None:
            body = _literal(explicit["body"])
            if isinstance(body, dict):
                settings = {**settings, **_named({str(key): value for key, value in body.items()})}
    return settings


def engine_settings_of(host: Host, path: str) -> dict[str, Any]:
    """The settings printed in the head of an engine log on ``host`` (read there; empty when it is missing)."""
    if host.file_facts(path) is None:
        return {}
    text = host.read_since(path, 0, max_bytes=HEAD_BYTES).text
    return engine_settings([last_frame(line) for line in text.splitlines()])
