"""Sending one notification: a signed JSON POST to a webhook, or an e-mail through SMTP.

Each function makes one attempt within a timeout and raises DeliveryError with what went wrong; the caller
records the attempt and tries again later (app.notifications.service).

A webhook receiver checks the signature by computing HMAC-SHA256 of the raw request body with the shared
secret and comparing it with the X-Restorescope-Signature header ("sha256=<hex>") in constant time.
"""

import hashlib
import hmac
import smtplib
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import EmailMessage
from typing import IO, Any

SIGNATURE_HEADER = "X-Restorescope-Signature"
EVENT_HEADER = "X-Restorescope-Event"
DELIVERY_HEADER = "X-Restorescope-Delivery"


class DeliveryError(Exception):
    """The attempt failed; the message says how, in words for the deliveries list."""


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def redact_url(url: str) -> str:
    """The address without what may be a credential (user info, path, query), for lists and logs: webhook
    addresses of chat services carry their token in the path."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    hidden = "/…" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{host}{port}{hidden}"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would follow a redirect of a POST as a GET without the body: a webhook must be its final address.
    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def post_webhook(url: str, body: bytes, *, event: str, delivery_id: int, secret: str | None, timeout_s: float) -> int:
    """POST the JSON body; the receiver must answer 2xx within the timeout. Returns the status code."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "restorescope-notifications",
        EVENT_HEADER: event,
        DELIVERY_HEADER: str(delivery_id),
    }
    if secret:
        headers[SIGNATURE_HEADER] = sign(secret, body)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 (http(s) only: checked when saved)
    shown = redact_url(url)
    try:
        with _opener.open(request, timeout=timeout_s) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        if 300 <= error.code < 400:
            raise DeliveryError(
                f"{shown} answered HTTP {error.code}, a redirect to {error.headers.get('Location')}: "
                "set the webhook to "
                "its final address"
            ) from None
        raise DeliveryError(f"{shown} answered HTTP {error.code}: {_read_text(error.fp)}") from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError | socket.timeout):
            raise DeliveryError(f"{shown} did not answer within {timeout_s:g} s") from None
        raise DeliveryError(f"cannot reach {shown}: {error.reason}") from None
    except TimeoutError:
        raise DeliveryError(f"{shown} did not answer within {timeout_s:g} s") from None
    except OSError as error:
        raise DeliveryError(f"cannot reach {shown}: {error}") from None


def _read_text(stream: IO[bytes] | None, limit: int = 300) -> str:
    if stream is None:
        return "(no body)"
    try:
        text = stream.read(limit).decode(errors="replace").strip()
    except OSError:
        return "(the body could not be read)"
    return text or "(empty body)"


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    sender: str
    user: str = ""
    password: str = ""
    starttls: bool = False


def send_email(server: SmtpServer, to: list[str], subject: str, text: str, *, timeout_s: float) -> str | None:
    """Send the message; returns which recipients were refused when others got it (sending again would
    repeat it to those)."""
    message = EmailMessage()
    message["From"] = server.sender
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message.set_content(text)
    try:
        with smtplib.SMTP(server.host, server.port, timeout=timeout_s) as smtp:
            if server.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if server.user:
                smtp.login(server.user, server.password)
            refused = smtp.send_message(message)
    except smtplib.SMTPRecipientsRefused as error:
        raise DeliveryError(
            f"the SMTP server {server.host}:{server.port} refused every recipient: {_refusals(error.recipients)}"
        ) from None
    except smtplib.SMTPException as error:
        raise DeliveryError(f"the SMTP server {server.host}:{server.port} failed: {error}") from None
    except TimeoutError:
        raise DeliveryError(
            f"the SMTP server {server.host}:{server.port} did not answer within {timeout_s:g} s"
        ) from None
    except OSError as error:
        raise DeliveryError(f"cannot reach the SMTP server {server.host}:{server.port}: {error}") from None
    return f"the SMTP server refused some recipients: {_refusals(refused)}" if refused else None


def _refusals(refused: dict[str, tuple[int, bytes]]) -> str:
    return "; ".join(
        f"{address} ({code} {reply.decode(errors='replace')})" for address, (code, reply) in refused.items()
    )
