"""The spec syntax that names a notification channel, and the channel each spec builds.

Specs: ``webhook:URL`` (the message as JSON), ``slack:URL`` (Slack incoming-webhook payload),
``ntfy:URL`` (ntfy topic URL; text body, title header), ``email:ADDRESS`` (SMTP settings from the
config), ``command:CMD`` (run through ``/bin/sh -c``, message text on stdin and fields in
``OPSLOOP_*`` environment variables), ``desktop`` (``notify-send`` when present).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from agent.events import UsageError
from agent.notify.channels import Channel
from agent.notify.command import CommandChannel
from agent.notify.desktop import DesktopChannel
from agent.notify.email import EmailChannel
from agent.notify.http import NtfyChannel, SlackChannel, WebhookChannel


def parse_channel(spec: str) -> Channel:
    """Build the channel a spec names; a malformed spec is a :class:`UsageError`."""
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
    raise UsageError(
        f"unknown notify spec {spec!r}; use webhook:URL, slack:URL, ntfy:URL, email:ADDRESS, command:CMD or desktop"
    )
