"""The spec syntax that names a notification channel, and the channel each spec builds.

Specs: ``webhook:URL`` (the message as JSON), ``slack:URL`` (Slack incoming-webhook payload),
``ntfy:URL`` (ntfy topic URL; text body, title header), ``email:ADDRESS`` (SMTP settings from the
config), ``command:CMD`` (run through ``/bin/sh -c``, message text on stdin and fields in
``OPSLOOP_*`` environment variables), ``desktop`` (``notify-send`` when present).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from agent.events import UsageError
from agent.notify.channels import Channel, PermanentDeliveryError
from agent.notify.command import CommandChannel
from agent.notify.desktop import DesktopChannel
from agent.notify.email import EmailChannel
from agent.notify.http import NtfyChannel, SlackChannel, WebhookChannel
from agent.notify.message import NotificationMessage
from agent.settings import NotifySettings
from tools.redact import MASK


class MaskedChannel:
    """A target the state holds masked and whose real form is gone (no secrets file): never sent to, so a
    broken URL is never recorded as delivered."""

    def __init__(self, spec: str) -> None:
        self.label = spec.split(":", 1)[0] + ":(masked)"

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        raise PermanentDeliveryError("the target is masked in the state and its real form is missing")


def parse_channel(spec: str) -> Channel:
    """Build the channel a spec names; a malformed spec is a :class:`UsageError`."""
    try:
        return _parse(spec)
    except ValueError as error:  # urlsplit on a malformed URL (an unclosed IPv6 bracket, a bad port)
        raise UsageError(f"notify spec {spec!r} is malformed: {error}") from None


def _parse(spec: str) -> Channel:
    if MASK in spec:
        return MaskedChannel(spec)
    kind, _, target = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "desktop":
        return DesktopChannel()
    if kind in ("webhook", "slack", "ntfy"):
        parts = urlsplit(target)
        if not target.startswith(("http://", "https://")) or not parts.hostname or parts.port == 0:
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
