"""Tool calls a model wrote into its reply text because the server parsed none out.

A local SGLang or vLLM server started without a tool-call parser returns the model's tool-call markup as
plain text: Hermes / Qwen ``<tool_call>{...}</tool_call>``, Qwen3-Coder ``<function=name>``, Kimi K2
``<|tool_calls_section_begin|>``, DeepSeek ``<｜tool▁calls▁begin｜>``, Mistral ``[TOOL_CALLS]``, Llama
``<|python_tag|>``. Nudging such a model to "call a tool" only burns the budget: the fix is on the server.
"""

from __future__ import annotations

import re

MARKERS = [
    re.compile(r"<tool_call>\s*\{"),
    re.compile(r"<function=[\w.-]+>"),
    re.compile(r"<\|tool_calls?_section_begin\|>|<\|tool_call_begin\|>"),
    re.compile(r"<｜tool▁calls?▁begin｜>|<｜tool▁call▁begin｜>"),
    re.compile(r"\[TOOL_CALLS\]"),
    re.compile(r"<\|python_tag\|>"),
]


def written_tool_call(text: str, tool_names: list[str]) -> str | None:
    """The markup found when ``text`` holds a tool call in a known template that names an offered tool."""
    for marker in MARKERS:
        match = marker.search(text)
        if match and any(name in text[match.start() :] for name in tool_names):
            return match.group(0)
    return None


def parser_ask_text(markup: str, base_url: str | None, model: str) -> tuple[str, str]:
    """The question and hypothesis for the operator when a server returned tool calls as text."""
    where = f"the server at {base_url}" if base_url else "the model server"
    question = (
        f"{where} returned the model's tool calls as plain text ({markup!r}) instead of structured "
        "tool calls. Please restart it with its tool-call parser enabled (SGLang: --tool-call-parser "
        "NAME, e.g. qwen25, kimi_k2, deepseekv31, hermes; vLLM: --enable-auto-tool-choice "
        "--tool-call-parser NAME, e.g. hermes, kimi_k2, deepseek_v31), and for a reasoning model its "
        "--reasoning-parser too; then resume."
    )
    hypothesis = (
        f"{model} writes tool calls in its chat template's markup; without a parser the server "
        "cannot turn them into tool_calls, so every step looks like a reply without a tool call."
    )
    return question, hypothesis
