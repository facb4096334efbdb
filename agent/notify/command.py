"""Run an operator's command: message text on stdin, fields in OPSLOOP_* environment variables."""

from __future__ import annotations

import os
import subprocess

from agent.notify.channels import DeliveryError
from agent.notify.message import NotificationMessage
from agent.settings import NotifySettings


class CommandChannel:
    def __init__(self, command: str) -> None:
        self.command = command
        self.label = f"command:{command.split()[0] if command.split() else command}"

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        fields = {
            "OPSLOOP_EVENT": message.event,
            "OPSLOOP_TITLE": message.title,
            "OPSLOOP_RUN_ID": message.run_id,
            "OPSLOOP_GOAL": message.goal,
            "OPSLOOP_STATUS": message.status,
            "OPSLOOP_NEEDED": message.needed,
            "OPSLOOP_QUESTION_ID": message.question_id or "",
            "OPSLOOP_HYPOTHESIS": message.hypothesis,
            "OPSLOOP_ANSWER_COMMAND": message.answer_command or "",
            "OPSLOOP_RESUME_COMMAND": message.resume_command or "",
            "OPSLOOP_MESSAGE_JSON": message.model_dump_json(),
        }
        try:
            completed = subprocess.run(
                ["/bin/sh", "-c", self.command],
                input=message.text(),
                text=True,
                env={**os.environ, **fields},
                capture_output=True,
                timeout=settings.timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DeliveryError(f"command timed out after {settings.timeout_seconds:.0f} s") from None
        except OSError as error:
            raise DeliveryError(f"command could not start: {error}") from None
        if completed.returncode != 0:
            raise DeliveryError(f"command exited {completed.returncode}: {completed.stderr.strip()[-300:]}")
