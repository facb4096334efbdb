"""A desktop pop-up through ``notify-send`` (libnotify), when it is installed."""

from __future__ import annotations

import shutil
import subprocess

from agent.notify.channels import DeliveryError, PermanentDeliveryError
from agent.notify.message import NotificationMessage
from agent.settings import NotifySettings


class DesktopChannel:
    label = "desktop"

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        program = shutil.which("notify-send")
        if program is None:
            raise PermanentDeliveryError("notify-send is not installed")
        urgency = "normal" if message.event == "done" else "critical"
        try:
            completed = subprocess.run(
                [program, "--app-name=opsloop", f"--urgency={urgency}", message.title, message.text()],
                capture_output=True,
                text=True,
                timeout=settings.timeout_seconds,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise DeliveryError(f"notify-send failed: {error}") from None
        if completed.returncode != 0:
            detail = completed.stderr.strip()[-200:]
            raise DeliveryError(f"notify-send exited {completed.returncode}: {detail}")
