"""patch_file / revert_patch: exact edits, diffs, backups, revert, and confinement to the allowed roots."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agent.state import ProjectState
from tools.base import NeedsApproval, ToolContext, ToolRegistry, ToolResult, ToolSettings
from tools.hosts.local import LocalHost
from tools.patch.tools import PatchFileTool, RevertPatchTool
from tools.patch.unified_diff import make_diff
from tools.patch.write_guard import WriteRefused, confine, write_bytes_atomic

ORIGINAL = "def capture_layers(model):\n    return [2, 30, 58]\n\n\ndef other():\n    return 1\n"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def context(tmp_path: Path, workdir: Path) -> ToolContext:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    return ToolContext(
        state=ProjectState(goal="t"),
        state_dir=state_dir,
        host=LocalHost(),
        settings=ToolSettings(engine_python=sys.executable, allowed_write_roots=[workdir]),
    )


def call(context: ToolContext, name: str, arguments: dict[str, object]) -> ToolResult:
    return ToolRegistry([PatchFileTool(), RevertPatchTool()]).execute(name, arguments, context)


def test_search_replace_then_revert_restores_the_original_bytes(context: ToolContext, workdir: Path) -> None:
    target = workdir / "model.py"
    target.write_text(ORIGINAL)
    target.chmod(0o640)
    result = call(
        context,
        "patch_file",
        {"path": "model.py", "search": "[2, 30, 58]", "replace": "[1, 29, 57]", "reason": "shift layer ids"},
    )
    assert result.ok, result.error
    assert target.read_text() == ORIGINAL.replace("[2, 30, 58]", "[1, 29, 57]")
    assert oct(target.stat().st_mode & 0o777) == oct(0o640)
    record = context.state.patches[0]
    assert record.id == "patch1" and record.path == str(target.resolve())
    assert "-    return [2, 30, 58]" in record.diff and "+    return [1, 29, 57]" in record.diff
    assert Path(record.backup_path).read_text() == ORIGINAL
    reverted = call(context, "revert_patch", {"patch_id": "patch1"})
    assert reverted.ok, reverted.error
    assert target.read_text() == ORIGINAL
    assert context.state.patches[0].reverted
    assert "already reverted" in (call(context, "revert_patch", {"patch_id": "patch1"}).error or "")


def test_search_must_match_exactly_once(context: ToolContext, workdir: Path) -> None:
    (workdir / "model.py").write_text(ORIGINAL)
    twice = call(context, "patch_file", {"path": "model.py", "search": "return", "replace": "yield"})
    assert not twice.ok and "matches 2 times" in (twice.error or "")
    never = call(context, "patch_file", {"path": "model.py", "search": "return [9]", "replace": "x"})
    assert not never.ok and "matches 0 times" in (never.error or "")
    assert (workdir / "model.py").read_text() == ORIGINAL
    assert context.state.patches == []


def test_unified_diff_applies_with_offset_and_rejects_stale_context(context: ToolContext, workdir: Path) -> None:
    target = workdir / "model.py"
    target.write_text(ORIGINAL)
    edited = ORIGINAL.replace("return 1", "return 2")
    diff = make_diff(ORIGINAL, edited, "model.py")
    target.write_text("# header line\n" + ORIGINAL)  # shifts every line by one: applied with an offset
    result = call(context, "patch_file", {"path": str(target), "diff": diff})
    assert result.ok, result.error
    assert target.read_text() == "# header line\n" + edited
    stale = call(context, "patch_file", {"path": str(target), "diff": diff})
    assert not stale.ok and "does not apply" in (stale.error or "")


def test_diff_without_trailing_newline_round_trips(context: ToolContext, workdir: Path) -> None:
    target = workdir / "a.txt"
    target.write_text("one\ntwo")
    diff = make_diff("one\ntwo", "one\nthree", "a.txt")
    assert "\\ No newline at end of file" in diff
    result = call(context, "patch_file", {"path": "a.txt", "diff": diff})
    assert result.ok, result.error
    assert target.read_text() == "one\nthree"


def test_revert_refuses_when_the_file_changed_and_when_later_patches_exist(context: ToolContext, workdir: Path) -> None:
    target = workdir / "model.py"
    target.write_text(ORIGINAL)
    assert call(context, "patch_file", {"path": "model.py", "search": "return 1", "replace": "return 2"}).ok
    assert call(context, "patch_file", {"path": "model.py", "search": "return 2", "replace": "return 3"}).ok
    blocked = call(context, "revert_patch", {"patch_id": "patch1"})
    assert not blocked.ok and "revert them first" in (blocked.error or "")
    target.write_text(target.read_text() + "# edited by hand\n")
    changed = call(context, "revert_patch", {"patch_id": "patch2"})
    assert not changed.ok and "changed after patch2" in (changed.error or "")
    assert call(context, "revert_patch", {"patch_id": "patch2", "force": True}).ok
    assert call(context, "revert_patch", {"patch_id": "patch1"}).ok
    assert target.read_text() == ORIGINAL


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "x.py"},
        {"path": "x.py", "search": "a"},
        {"path": "x.py", "search": "a", "replace": "b", "diff": "@@ -1 +1 @@\n-a\n+b\n"},
        {"path": "x.py", "search": "", "replace": "b"},
    ],
)
def test_malformed_arguments_are_errors(context: ToolContext, arguments: dict[str, object]) -> None:
    result = call(context, "patch_file", arguments)
    assert not result.ok and "invalid arguments" in (result.error or "")


def test_dotdot_is_refused_and_an_absolute_path_outside_the_roots_asks(
    context: ToolContext, tmp_path: Path, workdir: Path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text(ORIGINAL)
    dotdot = call(context, "patch_file", {"path": "../outside.py", "search": "return 1", "replace": "x"})
    assert not dotdot.ok and "'..'" in (dotdot.error or "")
    with pytest.raises(NeedsApproval, match="outside the writable roots"):  # a human is asked first
        call(context, "patch_file", {"path": str(outside), "search": "return 1", "replace": "x"})
    assert outside.read_text() == ORIGINAL


def test_symlinks_pointing_out_are_refused(context: ToolContext, tmp_path: Path, workdir: Path) -> None:
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    secret = outside_dir / "target.py"
    secret.write_text(ORIGINAL)
    (workdir / "link.py").symlink_to(secret)
    (workdir / "linked_dir").symlink_to(outside_dir, target_is_directory=True)
    as_file = call(context, "patch_file", {"path": "link.py", "search": "return 1", "replace": "x"})
    assert not as_file.ok and "symbolic link" in (as_file.error or "")
    through_dir = call(context, "patch_file", {"path": "linked_dir/target.py", "search": "return 1", "replace": "x"})
    assert not through_dir.ok and "outside the writable roots" in (through_dir.error or "")
    assert secret.read_text() == ORIGINAL


def test_no_roots_means_no_writes(tmp_path: Path) -> None:
    with pytest.raises(WriteRefused, match="no writable roots"):
        confine(str(tmp_path / "a"), [])


def test_a_file_swapped_for_a_symlink_after_the_check_is_not_written_through(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target_path = root / "file.txt"
    target_path.write_text("original")
    checked = confine(str(target_path), [root])
    info = os.stat(target_path)
    target_path.unlink()
    target_path.symlink_to(victim)  # the race: swapped between check and write
    with pytest.raises(WriteRefused, match="no longer a regular file"):
        write_bytes_atomic(checked, b"evil", expected=(info.st_ino, info.st_dev))
    assert victim.read_text() == "keep me"


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "sub" / "file.txt").write_text("original")
    checked = confine(str(root / "sub" / "file.txt"), [root])
    (root / "sub" / "file.txt").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(WriteRefused, match="without following a link"):
        write_bytes_atomic(checked, b"evil")
    assert list(elsewhere.iterdir()) == []


def test_the_engine_environments_site_packages_is_writable(context: ToolContext, tmp_path: Path) -> None:
    site = tmp_path / "engine" / "lib" / "python3.11" / "site-packages"
    (site / "sglang" / "srt" / "models").mkdir(parents=True)
    model_file = site / "sglang" / "srt" / "models" / "kimi_k25.py"
    model_file.write_text(ORIGINAL)
    python = tmp_path / "engine" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\necho '[\"{site}\"]'\n")  # stands in for the engine's interpreter
    python.chmod(0o755)
    context.settings.engine_python = str(python)
    result = call(context, "patch_file", {"path": str(model_file), "search": "[2, 30, 58]", "replace": "[1, 2]"})
    assert result.ok, result.error
    assert "[1, 2]" in model_file.read_text()
    elsewhere = tmp_path / "engine" / "bin" / "other.py"
    elsewhere.write_text(ORIGINAL)
    with pytest.raises(NeedsApproval) as asked:
        call(context, "patch_file", {"path": str(elsewhere), "search": "return 1", "replace": "x"})
    assert any(str(site) in line for line in asked.value.evidence if line.startswith("outside: "))
