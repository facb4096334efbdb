"""HTTP channels: a generic JSON webhook, a Slack incoming webhook, and an ntfy topic."""

from __future__ import annotations

from email.header import Header
from typing import Any

import httpx

from agent.notify.channels import DeliveryError, PermanentDeliveryError, url_label
from agent.notify.message import NotificationMessage
from agent.settings import NotifySettings

_PRIORITY = {"blocked": "high", "limit": "high", "failed": "high", "done": "default"}


def post(url: str, settings: NotifySettings, **request: Any) -> None:
    try:
        response = httpx.post(url, timeout=settings.timeout_seconds, **request)
    except httpx.HTTPError as error:
        raise DeliveryError(f"{type(error).__name__}: {error}") from None
    if response.status_code >= 500 or response.status_code in (408, 429):
        raise DeliveryError(f"HTTP {response.status_code}: {response.text[:200]}")
    if response.status_code >= 400:
        raise PermanentDeliveryError(f"HTTP {response.status_code}: {response.text[:200]}")


class WebhookChannel:
    """POSTs the message as JSON (every field, plus ``text``)."""

    def __init__(self, url: str) -> None:
        self.url, self.label = url, url_label("webhook", url)

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        post(self.url, settings, json={**message.model_dump(mode="json"), "text": message.text()})


class SlackChannel:
    """POSTs a Slack incoming-webhook payload: ``text`` (the fallback) and mrkdwn blocks."""

    def __init__(self, url: str) -> None:
        self.url, self.label = url, url_label("slack", url)

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        given = (message.answer_command, message.resume_command, message.status_command)
        commands = "\n".join(f"`{command}`" for command in given if command)
        blocks = [
            {"type": "header", "text": {"type": "plain_text", "text": message.title[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": message.text()[:2900]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": commands[:2900]}},
        ]
        post(self.url, settings, json={"text": message.title, "blocks": blocks})


class NtfyChannel:
    """POSTs the text to an ntfy topic URL; the title goes in a header (RFC 2047 when not ASCII)."""

    def __init__(self, url: str) -> None:
        self.url, self.label = url, url_label("ntfy", url)

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        title = message.title if message.title.isascii() else Header(message.title, "utf-8").encode()
        headers = {"Title": title, "Priority": _PRIORITY[message.event], "Tags": f"opsloop,{message.event}"}
        post(self.url, settings, content=message.text().encode("utf-8"), headers=headers)
