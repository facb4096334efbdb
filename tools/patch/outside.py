"""Patches outside the writable roots: a human approves the exact change first, and it is applied once.

A file outside every writable root is not refused outright when it is a regular file reached without a link
(the path given is its real path): the edit is worked out, and the human is asked with the path, the diff and
why it is outside. The approval is keyed by the path and a hash of the change (the file's bytes before and
after), so it admits exactly that patch of exactly that file, once; a second identical call asks again. The
file is read and written by walking from ``/`` without following any link, with the same atomic write and
backup as inside the roots. What :mod:`tools.off_limits` names (the agent's records, code and configuration,
the user's credentials) is refused before anyone is asked: that is never a question.
"""

from __future__ import annotations

import hashlib
import os

from tools.base import NeedsApproval, ToolContext
from tools.hosts.base import ConfinedFile, Host
from tools.patch.write_guard import WriteRefused
from tools.redact import redact_text

FILESYSTEM_ROOT = "/"
SHOWN_DIFF_LINES = 60


class NotAskable(Exception):
    """The file outside the roots cannot be put to a human (missing, not a regular file, reached through a
    link, or inside a root after all); the message says why."""


def absolute_path(raw_path: str, roots: list[str], host: Host) -> str:
    """``raw_path`` as an absolute path on the host: relative paths from the first root, ``~`` the host's home."""
    if raw_path == "~" or raw_path.startswith("~/"):
        return os.path.normpath(host.home() + raw_path[1:])
    if os.path.isabs(raw_path):
        return os.path.normpath(raw_path)
    return os.path.normpath(os.path.join(roots[0], raw_path))


def read_outside(raw_path: str, roots: list[str], host: Host) -> ConfinedFile:
    """Read a regular file outside every root, never through a link: the path given must be its real path.
    Raises :class:`NotAskable` otherwise."""
    if not roots or ".." in raw_path.split("/"):
        raise NotAskable("only a plain absolute or relative path can be approved")
    path = absolute_path(raw_path, roots, host)
    try:
        file = host.read_confined(path, [FILESYSTEM_ROOT])
    except WriteRefused as error:
        raise NotAskable(str(error)) from None
    if file.path != path:
        raise NotAskable(f"{path} goes through a symbolic link to {file.path}; give the real path")
    for root in roots:
        for place in {os.path.normpath(root), os.path.normpath(host.real_path(root))}:
            if path == place or path.startswith(place.rstrip("/") + "/"):
                raise NotAskable(f"{path} is inside the writable root {place}")
    return file


def _is_here(host: Host, context: ToolContext) -> bool:
    """Whether the host is the agent's own machine (the run's first host on the agent's files): paths there
    are named without a host."""
    return host.shares_agent_files and host is context.host


def _change_digest(file: ConfinedFile, edited: bytes) -> str:
    change = hashlib.sha256()
    for part in (file.data, edited):
        change.update(hashlib.sha256(part).digest())
    return change.hexdigest()


def approval_line(file: ConfinedFile, edited: bytes, host: Host, context: ToolContext) -> str:
    """What a human approves: this path (on this host) and this change, by the hash of its before and after."""
    where = "" if _is_here(host, context) else f"{host.name}:"
    return f"patch: {where}{file.path} (change sha256:{_change_digest(file, edited)})"


def ask(
    file: ConfinedFile, edited: bytes, diff: str, why_outside: str, reason: str, host: Host, context: ToolContext
) -> NeedsApproval:
    """The question: the path, why it is outside, the reason given, and the diff (the whole of it saved in the
    state directory when it is long)."""
    lines = redact_text(diff).splitlines()
    shown = lines[:SHOWN_DIFF_LINES]
    if len(lines) > SHOWN_DIFF_LINES:
        saved = context.save_output("patch-outside-roots.diff", redact_text(diff))
        shown.append(f"... {len(lines) - SHOWN_DIFF_LINES} more lines; the whole diff: {saved}")
    where = [] if _is_here(host, context) else [f"host: {host.name}"]
    # The change's digest in the reason keeps a question per change: an open question is reused only for the
    # same text, and its evidence must stay the change the human was shown.
    return NeedsApproval(
        f"patching {file.path} needs approval: it is outside the writable roots "
        f"(change {_change_digest(file, edited)[:12]})",
        evidence=[
            approval_line(file, edited, host, context),
            *where,
            f"outside: {why_outside}",
            *([f"reason: {redact_text(reason)}"] if reason else []),
            "diff:",
            *shown,
        ],
    )
