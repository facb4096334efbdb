"""The state document as the model sees it: complete where it matters, bounded in size however long the run.

Lists that grow with the run (findings, processes, benchmarks, patches, questions) keep only their most
recent entries, with a line saying how many older ones live in the full document on disk, and older
findings keep only their first evidence lines; notifications are left out. The rest is rendered as the
project's Markdown hand-over note. When that is still too long the lists are cut further, and as a last
resort the text itself is cut at ``max_chars``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.render import render_status
from agent.state import ProjectState

RECENT_ENTRIES: dict[str, int] = {"findings": 40, "processes": 12, "benchmarks": 15, "patches": 15, "questions": 8}
LEFT_OUT = ("notifications",)
FULL_EVIDENCE_FINDINGS = 5
OLDER_EVIDENCE_LINES = 3
SHRINK_FACTORS = (1.0, 0.5, 0.25, 0.1)


def bounded_copy(state: ProjectState, factor: float = 1.0) -> tuple[ProjectState, dict[str, int]]:
    """A copy with long lists cut to their recent entries; returns it and the count left out per list."""
    omitted: dict[str, int] = {}
    updates: dict[str, Any] = {name: [] for name in LEFT_OUT}
    for name, keep in RECENT_ENTRIES.items():
        entries = getattr(state, name)
        kept = max(2, int(keep * factor))
        if len(entries) > kept:
            omitted[name] = len(entries) - kept
            entries = entries[-kept:]
        updates[name] = list(entries)
    findings = updates["findings"]
    for index in range(max(len(findings) - FULL_EVIDENCE_FINDINGS, 0)):
        finding = findings[index]
        if len(finding.evidence) > OLDER_EVIDENCE_LINES:
            evidence = [
                *finding.evidence[:OLDER_EVIDENCE_LINES],
                f"({len(finding.evidence) - OLDER_EVIDENCE_LINES} more evidence lines on disk)",
            ]
            findings[index] = finding.model_copy(update={"evidence": evidence})
    return state.model_copy(update=updates), omitted


def render_state_document(state: ProjectState, state_dir: Path, max_chars: int) -> str:
    """The bounded state document as the Markdown hand-over note, at most ``max_chars`` characters
    (plus a short note) long."""
    text = ""
    for factor in SHRINK_FACTORS:
        copy, omitted = bounded_copy(state, factor)
        text = render_status(copy, state_dir)
        if omitted:
            counts = ", ".join(f"{count} older {name}" for name, count in omitted.items())
            text += f"\n\n({counts} are kept in the full state document on disk and left out here.)"
        if len(text) <= max_chars:
            return text
    cut = len(text) - max_chars
    return text[:max_chars] + f"\n[... {cut} characters of the state document left out to bound the prompt]"
