"""Shared test configuration and fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.cli import HttpReceiver, SmtpSink
from support.network_guard import refuse_non_loopback_network  # noqa: F401 - autouse: no network beyond loopback


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
