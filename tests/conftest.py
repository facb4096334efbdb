"""Shared test configuration and fixtures.

The first pytest process of a run marks itself as the run's owner (``support.run_mark``): every process the
tests start carries the mark, what killed runs left behind is ended before this run starts, and what this run
left is ended when it finishes. xdist workers inherit the mark and leave both to their controller, which also
decides which tests share a worker (``support.xdist_schedule``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from support.cli import HttpReceiver, SmtpSink
from support.network_guard import refuse_non_loopback_network  # noqa: F401 - autouse: no network beyond loopback
from support.run_mark import RUN_MARK, mark_this_run, reap_orphans, reap_run

RUN_MARK_KEY = pytest.StashKey[str]()


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if _is_xdist_worker(config):
        return
    if config.pluginmanager.hasplugin("xdist"):
        from support.xdist_schedule import SchedulePlugin  # imports xdist

        config.pluginmanager.register(SchedulePlugin(), "opsloop-xdist-schedule")
    ended = reap_orphans()
    if ended:
        sys.stderr.write(f"ended {len(ended)} processes left by killed test runs: {ended}\n")
    config.stash[RUN_MARK_KEY] = mark_this_run()


def pytest_unconfigure(config: pytest.Config) -> None:
    mark = config.stash.get(RUN_MARK_KEY, None)
    if mark is not None and os.environ.get(RUN_MARK) == mark:
        reap_run(mark)


@pytest.fixture
def http_receiver() -> Iterator[HttpReceiver]:
    """A loopback HTTP server recording POSTed notifications (webhook, Slack, ntfy)."""
    receiver = HttpReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture
def smtp_sink() -> Iterator[SmtpSink]:
    """A real SMTP server (aiosmtpd) on loopback collecting the mails the agent sends."""
    sink = SmtpSink().start()
    yield sink
    sink.stop()
