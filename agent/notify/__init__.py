"""Notifications on blocked, limit reached, done and failed, to every configured channel.

Each delivery is retried with tenacity (exponential waits); whatever happens, the outcome is
recorded in ``state.notifications`` and the run goes on: a broken channel never stops the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from agent.notify.channels import Channel, DeliveryError
from agent.notify.message import EventName, NotificationMessage, build_message
from agent.notify.specs import parse_channel
from agent.settings import NotifySettings
from agent.state import Notification, ProjectState, Question
from tools.redact import redact_text

__all__ = ["Channel", "NotificationMessage", "Notifier", "build_message", "parse_channel"]


class Notifier:
    def __init__(
        self,
        specs: list[str],
        settings: NotifySettings,
        state_dir: Path,
        progress: Callable[[str], None] = lambda line: None,
    ) -> None:
        """Parse every spec up front, so a typo is a usage error before the run starts."""
        self.channels = [parse_channel(spec) for spec in dict.fromkeys(specs)]
        self.settings, self.state_dir, self.progress = settings, state_dir, progress

    def notify(self, event: EventName, state: ProjectState, question: Question | None = None) -> list[Notification]:
        """Send to every channel; append one :class:`Notification` per channel to the state."""
        if not self.channels:
            return []
        message = build_message(event, state, self.state_dir, question)
        outcomes = [self._deliver(channel, message) for channel in self.channels]
        state.notifications.extend(outcomes)
        return outcomes

    def _deliver(self, channel: Channel, message: NotificationMessage) -> Notification:
        attempts = 0
        retrying = Retrying(
            stop=stop_after_attempt(self.settings.attempts),
            reraise=True,
            wait=wait_exponential(multiplier=self.settings.retry_wait_seconds, max=30),
            retry=retry_if_exception_type(DeliveryError),
        )
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    channel.send(message, self.settings)
        except Exception as error:  # a failed channel is recorded, never fatal
            reason = redact_text(f"{type(error).__name__}: {error}")[:500]
            self.progress(f"notification to {channel.label} failed after {attempts} attempt(s): {reason}")
            return Notification(
                channel=channel.label, event=message.event, delivered=False, error=reason, attempts=attempts
            )
        self.progress(f"notified {channel.label} ({message.event})")
        return Notification(channel=channel.label, event=message.event, delivered=True, attempts=attempts)
