"""Notification channels: the protocol they implement and the errors they raise.

What every channel shares: the :class:`Channel` protocol, the delivery errors and the label of a
URL. The channels themselves are in their own modules; :mod:`agent.notify.specs` builds one from a spec.

A channel's ``label`` is what the state records: URLs are cut to scheme, host and port, because the
path of a webhook or topic URL is often the secret that lets anyone post to it.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

from agent.notify.message import NotificationMessage
from agent.settings import NotifySettings


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
