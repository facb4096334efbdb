"""A worker that retitles itself (as vLLM's engine core and workers do, with setproctitle) keeps the spawn
marker readable, so that a stop finds it even when its group's leader is gone."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from support.real_engine import RealEngine

from tools.hosts.local import LocalHost
from tools.processes import MARKER_KEEPING_ENVIRONMENT, SPAWN_MARKER

RETITLE = (
    "import setproctitle, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', "
    "'import setproctitle, time; setproctitle.setproctitle(\"VLLM::Worker_TP0\"); time.sleep(120)'])\n"
    "time.sleep(120)\n"
)


def _members(host: LocalHost, leader: int, wait_seconds: float) -> list[str]:
    deadline = time.monotonic() + wait_seconds
    found: list[str] = []
    while time.monotonic() < deadline:
        found = [" ".join(member.argv) for member in host.group_members(leader, SPAWN_MARKER)]
        if any(argv.startswith("VLLM::Worker_TP0") for argv in found):
            return found
        time.sleep(0.5)
    return found


def test_a_retitled_worker_keeps_the_marker_only_with_the_kept_environment(
    real_engine: RealEngine, tmp_path: Path
) -> None:
    host = LocalHost(exit_dir=tmp_path / "exits")
    outcomes = {}
    # The kept case returns as soon as the worker shows; the plain one waits long enough for it to have shown.
    for name, extra, wait_seconds in (("kept", MARKER_KEEPING_ENVIRONMENT, 120.0), ("plain", {}, 15.0)):
        # The test run itself keeps SPT_NOENV set for everything it starts; each case starts from without it.
        settings = [f"{key}={value}" for key, value in extra.items()]
        spawned = host.spawn(
            ["env", "-u", "SPT_NOENV", *settings, str(real_engine.python), "-c", RETITLE],
            env={SPAWN_MARKER: name},
            log_path=tmp_path / f"{name}.log",
        )
        try:
            outcomes[name] = _members(host, spawned.pid, wait_seconds)
        finally:
            # The whole group this test started, including the worker the marker cannot find.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(spawned.pid, signal.SIGKILL)
    assert any(argv.startswith("VLLM::Worker_TP0") for argv in outcomes["kept"]), outcomes
    # Without it the retitled worker's environment is gone: the marker cannot find it (the leak this prevents).
    assert not any(argv.startswith("VLLM::Worker_TP0") for argv in outcomes["plain"]), outcomes
