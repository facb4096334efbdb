"""The state document as the model sees it: the live run, complete where it matters, bounded in size.

It is the project's Markdown hand-over note rendered for the running agent (the run is "running now",
not "stopped unexpectedly"), split into named sections so that later turns can carry only what changed
(:mod:`agent.policies.llm.state_updates`). Findings come in three sections: pinned findings (decisions
that still hold: what fixed what, hardware facts, what was ruled out), the newest findings, and the
digests of conversation turns folded out of the window, so early findings stay visible however long the
run. Lists that grow with the run keep their recent entries with a count of the older ones on disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.render import render_status
from agent.state import Finding, ProjectState

RECENT_ENTRIES: dict[str, int] = {"processes": 12, "benchmarks": 15, "patches": 15, "questions": 8}
RECENT_FINDINGS = 20
MAX_PINNED = 40
LEFT_OUT = ("notifications",)
SHRINK_FACTORS = (1.0, 0.5, 0.25, 0.1)
DIGESTS_KEY = "llm_digests"
FINDINGS_HEADING = "What was tried and what happened"
Sections = dict[str, str]


def _finding_lines(findings: list[Finding], evidence_lines: int) -> list[str]:
    lines: list[str] = []
    for finding in findings:
        lines.append(f"- step {finding.step}: {finding.summary}")
        lines += [f"    - `{item}`" for item in finding.evidence[:evidence_lines]]
    return lines


def findings_sections(state: ProjectState, factor: float = 1.0) -> Sections:
    """Pinned findings, the newest other findings, and the digests of folded turns."""
    pinned = [finding for finding in state.findings if finding.pinned][-MAX_PINNED:]
    others = [finding for finding in state.findings if not finding.pinned]
    keep = max(3, int(RECENT_FINDINGS * factor))
    recent = others[-keep:]
    older = len(others) - len(recent) + state.history.moved.get("findings", 0)
    tail = [f"({older} older findings are in the state document and its journal on disk.)"] if older else []
    sections = {
        "Pinned findings": "\n".join(_finding_lines(pinned, 3)) or "None pinned yet.",
        "Recent findings": "\n".join(tail + _finding_lines(recent, 3)) or "Nothing yet.",
    }
    digests = list(state.loop.policy_state.get(DIGESTS_KEY) or [])[-max(2, int(10 * factor)) :]
    if digests:
        lines = [f"- {item.get('summary', '')}" for item in digests]
        lines += [f"    - {line}" for line in (digests[-1].get("evidence") or [])]
        sections["Digests of folded conversation turns"] = "\n".join(lines)
    return sections


def budget_left(state: ProjectState) -> str:
    usage, limits = state.usage, state.limits
    return (
        f"Left before the run stops to ask: {max(limits.max_steps - state.step, 0)} steps, "
        f"{max(limits.max_wall_seconds - usage.wall_seconds, 0):.0f} s, "
        f"${max(limits.max_cost_usd - usage.cost_usd, 0):.2f}."
    )


def _bounded_copy(state: ProjectState, factor: float) -> tuple[ProjectState, dict[str, int]]:
    omitted: dict[str, int] = {}
    updates: dict[str, Any] = {name: [] for name in LEFT_OUT}
    for name, keep in RECENT_ENTRIES.items():
        entries = getattr(state, name)
        kept = max(2, int(keep * factor))
        if len(entries) > kept:
            omitted[name] = len(entries) - kept
            entries = entries[-kept:]
        updates[name] = list(entries)
    updates["findings"] = []
    return state.model_copy(update=updates), omitted


def split_sections(markdown: str) -> Sections:
    """``## Heading`` sections of a Markdown note; the text before the first heading is ``Run``."""
    sections: Sections = {}
    head, *rest = markdown.split("\n## ")
    sections["Run"] = head.strip()
    for block in rest:
        title, _, body = block.partition("\n")
        sections[title.strip()] = body.strip()
    return sections


def state_sections(state: ProjectState, state_dir: Path, max_chars: int) -> Sections:
    """The model's view of the state, section by section, at most about ``max_chars`` characters."""
    sections: Sections = {}
    for factor in SHRINK_FACTORS:
        copy, omitted = _bounded_copy(state, factor)
        sections = split_sections(render_status(copy, state_dir, holder_pid=os.getpid()))
        findings = findings_sections(state, factor)
        sections.pop(FINDINGS_HEADING, None)
        sections = {
            **{key: value for key, value in sections.items() if key != "Budget"},
            **findings,
            "Budget": f"{sections.get('Budget', '')}\n{budget_left(state)}",
        }
        if omitted:
            counts = ", ".join(f"{count} older {name}" for name, count in omitted.items())
            sections["Left out"] = f"{counts} are kept in the full state document on disk."
        if len(render_sections(sections)) <= max_chars:
            return sections
    text = render_sections(sections)
    return {"Run": text[:max_chars] + f"\n[... {len(text) - max_chars} characters left out to bound the prompt]"}


def render_sections(sections: Sections) -> str:
    parts = [sections.get("Run", "")]
    parts += [f"## {title}\n{body}" for title, body in sections.items() if title != "Run"]
    return "\n\n".join(part for part in parts if part)


def render_state_document(state: ProjectState, state_dir: Path, max_chars: int) -> str:
    """The bounded state document as one Markdown text."""
    return render_sections(state_sections(state, state_dir, max_chars))
