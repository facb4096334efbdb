"""The state document in an append-only conversation: whole once, then only what changed.

Providers check (Anthropic's prefix check) or cache (every provider's prompt cache) the conversation as
sent, so the state document that closes a user turn stays in that turn. Sending the whole document every
turn would fill the window, so a turn carries the whole document only when the window holds none (the
run's start, a resume, or after a compaction folded it away), and otherwise the sections that changed
since: new lines for the findings and digests, the whole section for the rest.
"""

from __future__ import annotations

from agent.policies.llm.state_view import Sections, render_sections

APPEND_ONLY = ("Pinned findings", "Recent findings", "Digests of folded conversation turns")
FULL_OPEN = "<state_document>"
FULL_CLOSE = "</state_document>"
UPDATE_OPEN = "<state_update>"
UPDATE_CLOSE = "</state_update>"


class StateTracker:
    """Remembers the sections the model has seen since the last whole document."""

    def __init__(self) -> None:
        self.seen: Sections = {}
        self._before: Sections = {}

    def forget(self) -> None:
        self.seen = {}

    def rollback(self) -> None:
        """Forget the last :meth:`part` (its turn is being rebuilt before it was answered)."""
        self.seen = dict(self._before)

    def part(self, sections: Sections, whole: bool) -> tuple[str, bool]:
        """The text closing the next user turn, and whether it is the whole document."""
        self._before = dict(self.seen)
        if whole or not self.seen:
            self.seen = dict(sections)
            return f"{FULL_OPEN}\n{render_sections(sections)}\n{FULL_CLOSE}", True
        changed: list[str] = []
        for title, body in sections.items():
            before = self.seen.get(title)
            if before == body:
                continue
            if title in APPEND_ONLY and before is not None:
                old = set(before.splitlines())
                added = [line for line in body.splitlines() if line not in old]
                if added:
                    changed.append(f"## {title} (new)\n" + "\n".join(added))
            else:
                changed.append(f"## {title}\n{body}")
        for title in self.seen.keys() - sections.keys():
            changed.append(f"## {title}\n(now empty)")
        self.seen = {**self.seen, **sections}
        body = "\n\n".join(changed) or "Nothing changed in the state document since the last message."
        return (
            f"{UPDATE_OPEN}\nChanges to the state document since your last message (the whole document is "
            f"further up in this conversation):\n{body}\n{UPDATE_CLOSE}"
        ), False
