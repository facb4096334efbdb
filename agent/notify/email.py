"""Email over SMTP (plain, STARTTLS or implicit TLS), settings from ``[notify.smtp]`` / OPSLOOP_SMTP_*."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

from agent.notify.channels import DeliveryError, PermanentDeliveryError
from agent.notify.message import NotificationMessage
from agent.settings import NotifySettings


class EmailChannel:
    def __init__(self, address: str) -> None:
        self.address, self.label = address, f"email:{address}"

    def send(self, message: NotificationMessage, settings: NotifySettings) -> None:
        smtp = settings.smtp
        email = EmailMessage()
        email["Subject"] = message.title
        email["From"] = smtp.sender
        email["To"] = self.address
        email.set_content(message.text())
        try:
            client = (
                smtplib.SMTP_SSL(
                    smtp.host, smtp.port, timeout=smtp.timeout_seconds, context=ssl.create_default_context()
                )
                if smtp.ssl
                else smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_seconds)
            )
            with client:
                if smtp.starttls and not smtp.ssl:
                    client.starttls(context=ssl.create_default_context())
                if smtp.user:
                    password = smtp.password.get_secret_value() if smtp.password else ""
                    client.login(smtp.user, password)
                client.send_message(email)
        except smtplib.SMTPAuthenticationError as error:
            raise PermanentDeliveryError(f"SMTP login refused ({error.smtp_code})") from None
        except smtplib.SMTPRecipientsRefused:
            raise PermanentDeliveryError(f"SMTP server refused recipient {self.address}") from None
        except (smtplib.SMTPException, OSError) as error:
            raise DeliveryError(f"SMTP {smtp.host}:{smtp.port}: {type(error).__name__}: {error}") from None
