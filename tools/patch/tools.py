"""patch_file and revert_patch: confined, atomic, reversible edits of source files.

An edit is either an exact search/replace (the search text must occur exactly once) or a unified
diff for one file. The original bytes are kept under ``<state>/patches/<id>/`` and the diff is
recorded in ``state.patches``; ``revert_patch`` puts the original back. Reads and writes go through the
host (``Host.read_confined`` / ``write_confined``), which applies :mod:`tools.patch.write_guard` where the
file lives, so they stay inside the allowed roots and never follow a symbolic link, on a remote host too. A
regular file outside every root is a question to a human, and an approved patch of it is applied once
(:mod:`tools.patch.outside`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, model_validator

from tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.hosts.base import ConfinedFile, Host
from tools.off_limits import off_limits_reason, secret_paths
from tools.patch.outside import FILESYSTEM_ROOT, NotAskable, approval_line, ask, read_outside
from tools.patch.unified_diff import DiffError, apply_diff, make_diff
from tools.patch.write_guard import WriteRefused
from tools.private_files import private_directory, write_private
from tools.records import PatchRecord
from tools.redact import redact_text

SITE_PACKAGES_PROBE = (
    "import json, os, sysconfig; paths = sysconfig.get_paths(); "
    "print(json.dumps(sorted(p for p in {paths['purelib'], paths['platlib']} if os.path.isdir(p))))"
)
_SITE_PACKAGES: dict[tuple[str, str], list[str]] = {}


class PatchFileArgs(ToolArgs):
    path: str = Field(description="File to edit; relative paths are taken from the working directory.")
    search: str | None = Field(default=None, description="Exact text to replace; must occur exactly once.")
    replace: str | None = Field(default=None, description="Replacement for `search`.")
    diff: str | None = Field(default=None, description="A unified diff for this one file, instead of search/replace.")
    reason: str = Field(default="", description="Why this edit is made (kept with the patch record).")
    host: str | None = Field(default=None, description="Host the file is on (default: the run's first host).")

    @model_validator(mode="after")
    def _one_kind_of_edit(self) -> PatchFileArgs:
        has_search = self.search is not None or self.replace is not None
        if has_search == (self.diff is not None):
            raise ValueError("give either search+replace or diff, not both and not neither")
        if has_search and (self.search is None or self.replace is None):
            raise ValueError("search and replace go together")
        if self.search == "":
            raise ValueError("search must not be empty")
        return self


class PatchFileOutput(ToolOutput):
    patch_id: str
    path: str
    backup_path: str
    diff: str
    approved_by_question: str | None = Field(
        default=None, description="The question a human approved this patch with (a file outside the roots)."
    )


class RevertPatchArgs(ToolArgs):
    patch_id: str = Field(description="Id of the patch to undo, as returned by patch_file (e.g. 'patch1').")
    force: bool = Field(default=False, description="Restore even if the file changed after the patch.")


class RevertPatchOutput(ToolOutput):
    patch_id: str
    path: str
    restored_bytes: int


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count_occurrences(text: str, needle: str) -> int:
    """Occurrences of ``needle``, overlapping ones included (so 'aa' in 'aaa' counts twice)."""
    count, start = 0, text.find(needle)
    while start != -1:
        count += 1
        start = text.find(needle, start + 1)
    return count


def engine_site_packages(context: ToolContext, host: Host) -> list[str]:
    """The engine environment's installed-packages directories on the host (patching an engine's model file is a
    real need), asked from its interpreter once per host and interpreter; empty if it cannot say."""
    key = (host.name, context.settings.engine_python)
    if key not in _SITE_PACKAGES:
        result = host.run([context.settings.engine_python, "-c", SITE_PACKAGES_PROBE], timeout=30)
        try:
            found = json.loads(result.stdout.strip().splitlines()[-1]) if result.exit_code == 0 else None
        except (ValueError, IndexError):
            found = None
        if not isinstance(found, list):
            return []
        _SITE_PACKAGES[key] = [item for item in found if isinstance(item, str)]
    return _SITE_PACKAGES[key]


def _off_limits(file: ConfinedFile, context: ToolContext, host: Host) -> str | None:
    """Why the agent may not change this file: its own records, code or configuration, or credentials (on a
    remote host: the user's credentials there)."""
    path = Path(file.path)
    if host.shares_agent_files:
        return off_limits_reason(path, context)
    for place in secret_paths(Path(host.home())):
        if path == place or place in path.parents:
            return f"{path} is in the user's credentials on {host.name} ({place}), which no tool may change"
    for own in host.agent_places():
        place = Path(host.real_path(own))
        if path == place or place in path.parents:
            return f"{path} is in the agent's own files on {host.name} ({place}), which no tool may change"
    return None


@dataclass(frozen=True)
class Located:
    """A file read through the guard, the roots that admitted it, and, for a file outside every writable root,
    why it is outside (such a file is read and written from ``/`` without following links, once approved)."""

    file: ConfinedFile
    roots: list[str]
    outside: str | None = None


def _read(raw_path: str, context: ToolContext, host: Host, outside_allowed: bool = True) -> Located:
    """Read through the guard, confined to the host's write roots (the working directory first), then also
    the engine's site-packages; a regular file outside them all is read too when ``outside_allowed`` (its
    patch then needs a human's approval). Never the agent's own records, code or configuration, nor the
    user's credentials (:mod:`tools.off_limits`): those are refused whatever a human would say."""
    located = _within_roots(raw_path, context, host, outside_allowed)
    if reason := _off_limits(located.file, context, host):
        raise ToolError(f"refused {raw_path!r}: {reason}")
    return located


def _within_roots(raw_path: str, context: ToolContext, host: Host, outside_allowed: bool) -> Located:
    roots = [str(root) for root in host.write_roots(context.settings.allowed_write_roots)]
    try:
        return Located(host.read_confined(raw_path, roots), roots)
    except WriteRefused as error:
        refusal = error
    extra = [root for root in engine_site_packages(context, host) if root not in roots]
    if roots and extra:
        try:
            return Located(host.read_confined(raw_path, roots + extra), roots + extra)
        except WriteRefused as error:
            refusal = error
    if not outside_allowed or not roots or ".." in raw_path.split("/"):
        raise ToolError(str(refusal)) from None
    try:
        file = read_outside(raw_path, roots + extra, host)
    except NotAskable as error:
        raise ToolError(f"{refusal} (not put to a human: {error})") from None
    return Located(
        file, [FILESYSTEM_ROOT], outside=f"{file.path} is in none of the writable roots ({', '.join(roots + extra)})"
    )


def _edited_text(args: PatchFileArgs, original: str, shown_path: str) -> str:
    if args.diff is not None:
        try:
            return apply_diff(original, args.diff)
        except DiffError as error:
            raise ToolError(f"diff does not apply to {shown_path}: {error}") from None
    assert args.search is not None and args.replace is not None
    matches = _count_occurrences(original, args.search)
    if matches != 1:
        hint = (
            "add surrounding lines to make it unique"
            if matches > 1
            else "re-read the file; whitespace and indentation must match exactly"
        )
        raise ToolError(f"search text matches {matches} times in {shown_path} (it must match exactly once); {hint}")
    return original.replace(args.search, args.replace, 1)


class PatchFileTool(Tool[PatchFileArgs, PatchFileOutput]):
    name = "patch_file"
    description = (
        "Edit a file inside the writable roots (working directory, engine site-packages): an "
        "exact search/replace that must match exactly once, or a unified diff. The original is "
        "backed up and the edit can be undone with revert_patch. A file outside the roots (by its "
        "real path, not through a link) is a question to a human with the diff; if approved, the same "
        "call applies that exact edit once. The agent's own state, code and configuration and the "
        "user's credentials are never edited."
    )
    args_model = PatchFileArgs
    output_model = PatchFileOutput
    timeout_seconds = 30.0

    def run(self, args: PatchFileArgs, context: ToolContext) -> PatchFileOutput:
        host = context.host_named(args.host)
        located = _read(args.path, context, host)
        original_file, shown = located.file, located.file.path
        try:
            original = original_file.data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{shown} is not UTF-8 text; patch_file edits text files only") from None
        edited = _edited_text(args, original, shown)
        if edited == original:
            raise ToolError(f"the edit leaves {shown} unchanged; nothing to do")
        diff = make_diff(original, edited, shown)
        edited_bytes = edited.encode("utf-8")
        approval = None
        if located.outside is not None:
            approval = context.state.take_approval(approval_line(original_file, edited_bytes, host, context))
            if approval is None:
                raise ask(original_file, edited_bytes, diff, located.outside, args.reason, host, context)
            context.checkpoint()  # the approval is used up before the file is written
        patch_id = context.state.next_id("patch", [record.id for record in context.state.patches])
        backup_dir = private_directory(context.state_dir / "patches" / patch_id)
        backup_path = backup_dir / Path(shown).name
        # The original's owner bits, never more: a private file stays private, and none is open to others.
        write_private(backup_path, original_file.data, original_file.mode & 0o700)
        write_private(backup_dir / "change.diff", redact_text(diff).encode("utf-8"))  # the backup stays exact
        try:
            host.write_confined(shown, located.roots, edited_bytes, expected=original_file)
        except WriteRefused as error:
            raise ToolError(str(error)) from None
        context.state.patches.append(
            PatchRecord(
                id=patch_id,
                path=shown,
                backup_path=str(backup_path),
                diff=diff,
                host=host.name if host is not context.host else "",
                reason=args.reason,
                original_sha256=_sha256(original_file.data),
                patched_sha256=_sha256(edited_bytes),
                approved_by_question=approval or "",
            )
        )
        context.checkpoint()
        return PatchFileOutput(
            patch_id=patch_id, path=shown, backup_path=str(backup_path), diff=diff, approved_by_question=approval
        )


class RevertPatchTool(Tool[RevertPatchArgs, RevertPatchOutput]):
    name = "revert_patch"
    description = (
        "Undo a patch made by patch_file by restoring the backed-up original. Later patches of "
        "the same file must be reverted first."
    )
    args_model = RevertPatchArgs
    output_model = RevertPatchOutput
    timeout_seconds = 30.0

    def run(self, args: RevertPatchArgs, context: ToolContext) -> RevertPatchOutput:
        patches = context.state.patches
        record = next((item for item in patches if item.id == args.patch_id), None)
        if record is None:
            known = ", ".join(item.id for item in patches) or "none"
            raise ToolError(f"no patch {args.patch_id!r}; known patches: {known}")
        if record.reverted:
            raise ToolError(f"{record.id} was already reverted")
        later = [
            item.id for item in patches[patches.index(record) + 1 :] if item.path == record.path and not item.reverted
        ]
        if later:
            raise ToolError(f"{record.path} has later patches ({', '.join(later)}); revert them first")
        host = context.host_named(record.host or None)
        try:
            located = _read(record.path, context, host, outside_allowed=bool(record.approved_by_question))
            current, roots = located.file, located.roots
            backup = Path(record.backup_path).read_bytes()
        except OSError as error:
            raise ToolError(f"cannot revert {record.id}: {error}") from None
        expected = getattr(record, "patched_sha256", None)
        if expected and _sha256(current.data) != expected and not args.force:
            raise ToolError(
                f"{record.path} changed after {record.id} was applied; reverting would discard "
                "those changes. Inspect it, or call again with force=true"
            )
        try:
            host.write_confined(record.path, roots, backup, expected=current)
        except WriteRefused as error:
            raise ToolError(str(error)) from None
        record.reverted = True
        context.checkpoint()
        return RevertPatchOutput(patch_id=record.id, path=record.path, restored_bytes=len(backup))
