"""The start-up milestone lines a release logs, as message templates (fields shown as ``{}``).

A milestone is found by a probe, a fixed piece of wording, inside the first argument of a logging or
print call; the whole message is recorded, so the patterns the agent uses come from the release's
own text rather than from memory.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from engine_facts.extract.pyindex import PackageIndex, string_template

LOG_CALLS = {"info", "warning", "debug", "error", "print", "info_once", "warning_once", "log", "print_info_once"}
PROBES: dict[str, tuple[str, ...]] = {
    "ready": ("fired up and ready to roll", "Starting vLLM API server", "Starting vLLM server on"),
    "distributed_init": (
        "Init torch distributed begin",
        "Init parallel begin",
        "in world size",
        "distributed_init_method=",
    ),
    "distributed_init_done": ("Init torch distributed ends", "Init parallel end"),
    "weights_begin": ("Load weight begin", "Starting to load model"),
    "weights_progress": ("Loading safetensors checkpoint shards",),
    "weights_end": ("Load weight end", "Model loading took", "Loading weights took"),
    "kv_cache": (
        "KV Cache is allocated",
        "is allocated. dtype:",
        "}. dtype: {}, #tokens:",  # 0.5.18+: "{cache_name} {'is allocated'}. dtype: ..." in one f-string
        "KV cache size:",
        "Available KV cache memory",
        "# GPU blocks",
        "# cuda blocks",
    ),
    "cuda_graph_begin": (
        "Capture cuda graph begin",
        "cuda graph begin",
        "} begin. This can take up to several minutes",  # 0.5.8: f"Capture {'cuda graph'} begin. ..."
        "CUDA graph begin",
        "Capturing cudagraphs",
        "Capturing CUDA graph shapes",
        "Capturing CUDA graphs",
    ),
    "cuda_graph_end": (
        "Capture cuda graph end",
        "cuda graph end",
        "} end. Time elapsed:",
        "CUDA graph end",
        "Graph capturing finished",
    ),
}


@dataclass(frozen=True)
class LogFact:
    milestone: str
    template: str
    level: str  # the logging call (info, debug, ...) or "progress" for a progress-bar description
    source: str


def _message(node: ast.Call) -> tuple[str, str] | None:
    """(template, level) of a logging call's message or of a progress bar's ``desc=``."""
    function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if function == "log_info_on_rank0" and len(node.args) > 1:  # SGLang: log_info_on_rank0(logger, message)
        template = string_template(node.args[1])
        return (template, "info") if template is not None else None
    if function in LOG_CALLS and node.args:
        template = string_template(node.args[0])
        return (template, function) if template is not None else None
    for keyword in node.keywords:
        if keyword.arg == "desc":
            template = string_template(keyword.value)
            if (
                template is None
                and isinstance(keyword.value, ast.Call)
                and isinstance(keyword.value.func, ast.Attribute)
                and keyword.value.func.attr == "format"
            ):
                template = string_template(keyword.value.func.value)
            return (template, "progress") if template is not None else None
    return None


def _might_hold(source: str, probe: str) -> bool:
    """Cheap test before parsing: a probe's literal pieces (between ``{}`` fields) occur in the source text."""
    return any(len(piece.strip()) >= 6 and piece in source for piece in probe.split("{}"))


def read_milestones(index: PackageIndex) -> list[LogFact]:
    probes = [(milestone, probe) for milestone, words in PROBES.items() for probe in words]
    found: set[LogFact] = set()
    for path in index.paths():
        text = index.texts[path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")][1]
        if "/test" in path or "benchmark" in path or not any(_might_hold(text, probe) for _, probe in probes):
            continue
        module = index.module_of_path(path)
        if module is None:
            continue
        for node in ast.walk(module.tree):
            message = _message(node) if isinstance(node, ast.Call) else None
            if message is None:
                continue
            template, level = message
            for milestone, probe in probes:
                if probe in template:
                    found.add(LogFact(milestone, " ".join(template.split()), level, path))
    return sorted(found, key=lambda fact: (fact.milestone, fact.template, fact.source))
