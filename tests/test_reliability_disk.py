"""A full disk and a read-only state directory: a clear one-line error, and the last good state untouched.

The tests run as root here, and root ignores permission bits, so "read-only" and "full" are made real:
the state directory is a tiny tmpfs (``mount -t tmpfs -o size=...``), filled to the last byte or remounted
read-only. Where mounting is not allowed, the full-disk case runs the agent with ``RLIMIT_FSIZE`` instead
(a write past the limit fails with EFBIG, the same error path as ENOSPC) and the mount-only cases are
skipped with that reason. A file where the state directory should be needs neither.
"""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import REPO_ROOT, agent_environment, journal_records, run_agent, write_script
from support.reliability import journal_disagreements

from agent.store import read_state

PLAN = [
    {"tool": "update_state", "arguments": {"findings": [{"summary": "before the disk filled"}]}},
    {"ask": "May I go on?"},
    {"tool": "shell", "arguments": {"command": "head -c 200000 /dev/zero > filler"}},
    {"tool": "update_state", "arguments": {"findings": [{"summary": "x" * 4000}]}},
    {"finish": "done after the disk was freed"},
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_clear_line(stderr: str, reason: str) -> None:
    lines = [line for line in stderr.splitlines() if line.startswith("agent: error:")]
    assert len(lines) == 1 and reason in lines[0] and "Traceback" not in stderr, stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path | None]:
    """A 192 KiB tmpfs at ``tmp_path/state``, or None where this process may not mount."""
    mount_point = tmp_path / "state"
    mount_point.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=192k", "tmpfs", str(mount_point)], capture_output=True, check=False
        ).returncode
        == 0
    )
    yield mount_point if mounted else None
    if mounted:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory: Path) -> Path:
    """Write a filler file until the filesystem has no byte left."""
    filler = directory / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (65536, 4096, 512, 1):
            while True:
                try:
                    os.write(descriptor, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(descriptor)
    return filler


def _blocked_run(state_dir: Path, tmp_path: Path) -> Path:
    script = write_script(tmp_path / "plan.json", PLAN)
    blocked = run_agent(
        "run", "-g", "fill the disk", "--script", script, "--state-dir", state_dir, cwd=_work(state_dir)
    )
    assert blocked.returncode == 3, blocked.stderr
    return script


def _work(state_dir: Path) -> Path:
    """The run's working directory (its write root) beside the state directory, on the same file system: the
    shell's sandbox hides the state directory, so a command fills the disk from here."""
    work = state_dir.parent / "work"
    work.mkdir(exist_ok=True)
    return work


def test_a_full_disk_is_a_clear_error_and_the_last_good_state_is_kept(small_disk: Path | None, tmp_path: Path) -> None:
    if small_disk is None:
        pytest.skip("mounting a small tmpfs is not allowed here; see the RLIMIT_FSIZE test")
    state_dir = small_disk / "state"
    _blocked_run(state_dir, tmp_path)
    before = _digest(state_dir / "latest.json")
    filler = _fill(state_dir)

    refused = run_agent("resume", state_dir, "--answer", "yes", cwd=_work(state_dir))
    assert refused.returncode == 1
    _one_clear_line(refused.stderr, "No space left on device")
    assert _digest(state_dir / "latest.json") == before, "the last good state was changed"
    assert not list(state_dir.glob(".*.tmp")), "a partial temp file was left behind"

    filler.unlink()  # the operator frees space; the run goes on, and fills the disk itself (a tool's output)
    full_again = run_agent("resume", state_dir, "--answer", "yes", cwd=_work(state_dir))
    assert full_again.returncode == 1, full_again.stderr
    _one_clear_line(full_again.stderr, "No space left on device")
    kept = read_state(state_dir / "latest.json")
    assert kept.questions[0].answer == "yes" and kept.status in ("running", "failed")
    assert journal_disagreements(kept, journal_records(state_dir)) == []

    (_work(state_dir) / "filler").unlink()
    done = run_agent("resume", state_dir, cwd=_work(state_dir))
    assert done.returncode == 0, done.stderr
    final = read_state(state_dir / "latest.json")
    assert final.status == "done" and [item.summary for item in final.findings][:1] == ["before the disk filled"]
    assert journal_disagreements(final, journal_records(state_dir)) == []


def test_a_read_only_state_directory_is_a_clear_error_and_nothing_changes(
    small_disk: Path | None, tmp_path: Path
) -> None:
    if small_disk is None:
        pytest.skip("remounting read-only needs a mount this process may not make")
    state_dir = small_disk
    _blocked_run(state_dir, tmp_path)
    files = {path.name: _digest(path) for path in state_dir.iterdir() if path.is_file()}
    subprocess.run(["mount", "-o", "remount,ro", str(state_dir)], check=True)
    for command in (
        ["resume", str(state_dir), "--answer", "yes"],
        ["ask", "--answer", "yes", "--state-dir", str(state_dir)],
    ):
        refused = run_agent(*command)
        assert refused.returncode == 2
        _one_clear_line(refused.stderr, "Read-only file system")
    status = run_agent("status", state_dir)  # reading still works
    assert status.returncode == 0 and "May I go on?" in status.stdout
    assert {path.name: _digest(path) for path in state_dir.iterdir() if path.is_file()} == files


def test_a_file_where_the_state_directory_should_be_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file")
    script = write_script(tmp_path / "plan.json", PLAN)
    refused = run_agent("run", "-g", "g", "--script", script, "--state-dir", blocker / "state")
    assert refused.returncode == 2
    _one_clear_line(refused.stderr, "Not a directory")
    assert blocker.read_text() == "a file"


def test_a_write_past_the_file_size_limit_is_a_clear_error_and_the_state_is_kept(tmp_path: Path) -> None:
    """The same error path without a mount: RLIMIT_FSIZE makes the next large write fail with EFBIG."""
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    _blocked_run(state_dir, tmp_path)
    before = _digest(state_dir / "latest.json")
    limit = (state_dir / "latest.json").stat().st_size - 1  # the next state document cannot be written whole

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    refused = subprocess.run(
        [sys.executable, "-m", "agent", "resume", str(state_dir), "--answer", "yes"],
        capture_output=True,
        text=True,
        env=agent_environment(),
        cwd=REPO_ROOT,
        preexec_fn=limited,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1
    _one_clear_line(refused.stderr, "File too large")
    assert _digest(state_dir / "latest.json") == before
    assert not list(state_dir.glob(".*.tmp"))
    resumed = run_agent("resume", state_dir, "--answer", "yes", cwd=_work(state_dir))  # the limit is gone
    assert resumed.returncode == 0, resumed.stderr
    assert read_state(state_dir / "latest.json").status == "done"
