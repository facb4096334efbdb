"""One agent per state directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.events import StateDirectoryLocked
from agent.lock import StateDirectoryLock, holder_pid


def test_a_second_lock_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    with StateDirectoryLock(tmp_path):
        assert holder_pid(tmp_path) == os.getpid()
        with pytest.raises(StateDirectoryLocked, match=f"PID {os.getpid()}"):
            StateDirectoryLock(tmp_path).acquire()
    assert holder_pid(tmp_path) is None
    with StateDirectoryLock(tmp_path) as again:
        assert again.held


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    code = (
        "import sys, os; from pathlib import Path; from agent.lock import StateDirectoryLock; "
        "StateDirectoryLock(Path(sys.argv[1])).acquire(); print(os.getpid()); os._exit(9)"
    )
    holder = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=False,
    )
    assert holder.returncode == 9
    assert (tmp_path / "agent.lock").read_text().strip() == holder.stdout.strip()  # the dead holder's PID
    assert holder_pid(tmp_path) is None
    lock = StateDirectoryLock(tmp_path)
    lock.acquire()
    assert (tmp_path / "agent.lock").read_text().strip() == str(os.getpid())
    lock.release()


def test_child_processes_do_not_inherit_the_lock(tmp_path: Path) -> None:
    with StateDirectoryLock(tmp_path):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with StateDirectoryLock(tmp_path) as lock:  # the sleeping child must not hold it
            assert lock.held
    finally:
        child.kill()
        child.wait()
