"""Notification channels and the spec syntax that names them.

Specs: ``webhook:URL`` (the message as JSON), ``slack:URL`` (Slack incoming-webhook payload),
``ntfy:URL`` (ntfy topic URL; text body, title header), ``email:ADDRESS`` (SMTP settings from the
config), ``command:CMD`` (run through ``/bin/sh -c``, message text on stdin and fields in
``OPSLOOP_*`` environment variables), ``desktop`` (``notify-send`` when present).

A channel's ``label`` is what the state records: URLs are cut to scheme, host and port, because the
path of a webhook or topic URL is often the secret that lets anyone post to it.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

from agent.config import NotifySettings
from agent.events import UsageError
from agent.notify.message import NotificationMessage


class DeliveryError(Exception):
    """A delivery failed in a way worth retrying (connection refused, 5xx, non-zero exit...)."""


class PermanentDeliveryError(Exception):
    """A delivery that retrying cannot fix (no notify-send, 4xx from the receiver)."""


class Channel(Protocol):
    label: str

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        """Deliver once; raise :class:`DeliveryError` or :class:`PermanentDeliveryError` on failure."""


def url_label(kind: str, url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]  # never the user:password part
    return f"{kind}:{parts.scheme}://{host}" + ("/..." if parts.path.strip("/") else "")


def parse_channel(spec: str) -> Channel:
    """Build the channel a spec names; a malformed spec is a :class:`UsageError`."""
    from agent.notify.command import CommandChannel
    from agent.notify.desktop import DesktopChannel
    from agent.notify.email import EmailChannel
    from agent.notify.http import NtfyChannel, SlackChannel, WebhookChannel

    kind, _, target = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "desktop":
        return DesktopChannel()
    if kind in ("webhook", "slack", "ntfy"):
        if not target.startswith(("http://", "https://")) or not urlsplit(target).netloc:
            raise UsageError(f"notify spec {kind}:... needs an http(s) URL, got {target!r}")
        if kind == "webhook":
            return WebhookChannel(target)
        return SlackChannel(target) if kind == "slack" else NtfyChannel(target)
    if kind == "email":
        if "@" not in target:
            raise UsageError(f"notify spec email:... needs an address, got {target!r}")
        return EmailChannel(target)
    if kind == "command":
        if not target.strip():
            raise UsageError("notify spec command:... needs a command")
        return CommandChannel(target)
    raise UsageError(f"unknown notify spec {spec!r}; use webhook:URL, slack:URL, ntfy:URL, email:ADDRESS, "
                     "command:CMD or desktop")
