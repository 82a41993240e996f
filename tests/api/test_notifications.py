"""Notifications end to end against real receivers: an HTTP server on a local port (http.server) and an SMTP
server (aiosmtpd). Events come from job rows in the store; delivery runs with an explicit clock so retries are
checked without waiting."""

import hashlib
import hmac
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.models import Backup, Notification, ProtectedDatabase
from app.notifications.service import deliver_due, record_events, send_test
from tests.api.conftest import add_restore, error_message
from tests.conftest import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


@dataclass
class Receiver:
    """A webhook receiver: answers each POST with the next scripted reply (a status, or "hang" to stay silent
    for two seconds), then 200."""

    url: str
    received: list[Received] = field(default_factory=list)
    replies: list[int | str] = field(default_factory=list)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    port = free_port()
    state = Receiver(f"http://127.0.0.1:{port}/hooks/T0K3N")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.received.append(Received(self.path, dict(self.headers.items()), body))
            reply = state.replies.pop(0) if state.replies else 200
            if reply == "hang":
                time.sleep(2)
                reply = 200
            assert isinstance(reply, int)
            try:
                self.send_response(reply)
                if 300 <= reply < 400:
                    self.send_header("Location", "https://elsewhere.example.com/hook")
                self.end_headers()
                self.wfile.write(b"receiver says no" if reply >= 400 else b"ok")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the sender gave up waiting, as it should

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], bytes]] = []

    async def handle_DATA(self, _server: SMTP, _session: Session, envelope: Envelope) -> str:
        assert isinstance(envelope.content, bytes)
        self.messages.append((list(envelope.rcpt_tos), envelope.content))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield mailbox, port
    controller.stop()


def settings_with(**values: Any) -> Settings:
    return get_settings().model_copy(update={"notify_timeout_s": 1.0, "notify_retry_base_s": 60.0, **values})


def protect(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post(
        "/api/v1/protected-databases",
        json={"name": "shop", "database": "shop", "rto_s": 3600, "backup_glob": "trends/*", **fields},
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def rows() -> list[Notification]:
    with session_scope() as session:
        found = list(session.query(Notification).order_by(Notification.id))
        for row in found:
            session.expunge(row)
        return found


def test_a_failed_restore_is_posted_once_signed(
    client: TestClient, shop_backup: Backup, receiver: Receiver, now: datetime
) -> None:
    protected = protect(client, webhook_url=receiver.url, webhook_secret="shared-secret")
    job_id = add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    settings = settings_with(public_url="https://restorescope.example.com/")

    for _ in range(3):  # the scheduler looks again and again: the event is recorded and sent once
        with session_scope() as session:
            record_events(session, settings, now + timedelta(minutes=1))
        deliver_due(session_scope, settings, now + timedelta(minutes=1))
    assert len(receiver.received) == 1
    post = receiver.received[0]
    assert post.path == "/hooks/T0K3N" and post.headers["Content-Type"] == "application/json"
    assert post.headers["X-Restorescope-Event"] == "job_failed"
    expected = "sha256=" + hmac.new(b"shared-secret", post.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(post.headers["X-Restorescope-Signature"], expected)
    body = post.json
    assert body["event"] == "job_failed" and body["event_key"] == f"job_failed:{protected['id']}:{job_id}"
    assert body["summary"] == f"shop: restore job #{job_id} failed: the sandbox ran out of disk"
    assert body["protected_database"] == {"id": protected["id"], "name": "shop", "database": "shop"}
    assert body["details"]["job_id"] == job_id and body["link"] == f"https://restorescope.example.com/jobs/{job_id}"
    assert body["delivery"]["attempt"] == 1 and post.headers["X-Restorescope-Delivery"] == str(body["delivery"]["id"])

    listed = client.get("/api/v1/notifications", params={"protected_database_id": protected["id"]}).json()
    [row] = listed["data"]
    assert row["status"] == "sent" and row["attempts"] == 1 and row["channel"] == "webhook"
    # The token in the webhook's path is never shown.
    assert row["destination"] == f"{receiver.url.split('/hooks')[0]}/…" and "T0K3N" not in json.dumps(listed)


def test_failures_before_the_database_was_protected_are_not_news(
    client: TestClient, shop_backup: Backup, receiver: Receiver, now: datetime
) -> None:
    add_restore(shop_backup, days_ago=1, restore_s=3, status="failed")
    protect(client, webhook_url=receiver.url)
    with session_scope() as session:
        assert record_events(session, settings_with(), now) == []


def test_a_failing_receiver_is_retried_with_growing_delays(
    client: TestClient, shop_backup: Backup, receiver: Receiver, now: datetime
) -> None:
    protect(client, webhook_url=receiver.url)
    add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    receiver.replies = [500, 503]
    settings = settings_with()
    start = now + timedelta(minutes=1)
    with session_scope() as session:
        record_events(session, settings, start)

    deliver_due(session_scope, settings, start)
    [row] = rows()
    assert row.status == "retrying" and row.attempts == 1
    assert row.last_error == f"{receiver.url.split('/hooks')[0]}/… answered HTTP 500: receiver says no"
    assert row.next_attempt_at == start + timedelta(seconds=60)
    deliver_due(session_scope, settings, start + timedelta(seconds=59))  # not due yet
    assert len(receiver.received) == 1
    deliver_due(session_scope, settings, start + timedelta(seconds=60))
    [row] = rows()
    assert row.status == "retrying" and row.attempts == 2 and "HTTP 503" in (row.last_error or "")
    assert row.next_attempt_at == start + timedelta(seconds=60 + 120)
    deliver_due(session_scope, settings, start + timedelta(seconds=180))
    [row] = rows()
    assert row.status == "sent" and row.attempts == 3 and row.last_error is None
    assert [r.json["delivery"]["attempt"] for r in receiver.received] == [1, 2, 3]


def test_a_silent_receiver_times_out_and_the_failure_is_logged_and_listed(
    client: TestClient, shop_backup: Backup, receiver: Receiver, caplog: pytest.LogCaptureFixture, now: datetime
) -> None:
    protected = protect(client, webhook_url=receiver.url)
    add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    receiver.replies = ["hang", "hang"]
    settings = settings_with(notify_timeout_s=0.5, notify_max_attempts=2)
    with session_scope() as session:
        record_events(session, settings, now)
    with caplog.at_level(logging.WARNING, logger="restorescope.notifications"):
        started = time.monotonic()
        deliver_due(session_scope, settings, now)
        assert time.monotonic() - started < 1.9  # gave up at the timeout, did not wait for the reply
        deliver_due(session_scope, settings, now + timedelta(seconds=60))
    [row] = rows()
    assert row.status == "failed" and row.attempts == 2
    assert row.last_error == f"{receiver.url.split('/hooks')[0]}/… did not answer within 0.5 s"
    assert (
        "attempt 1 failed, trying again in 0:01:00" in caplog.text and "failed for good after 2 attempts" in caplog.text
    )
    listed = client.get("/api/v1/notifications", params={"status": "failed"}).json()
    assert listed["count"] == 1 and listed["data"][0]["protected_database_id"] == protected["id"]
    assert listed["data"][0]["next_attempt_at"] is None
    # Nothing more is tried.
    deliver_due(session_scope, settings, now + timedelta(days=1))
    time.sleep(0.1)
    assert len(receiver.received) == 2


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (302, "answered HTTP 302, a redirect to https://elsewhere.example.com/hook: set the webhook to its final"),
        (404, "answered HTTP 404: receiver says no"),
    ],
)
def test_a_refusing_receiver_says_how(
    client: TestClient, shop_backup: Backup, receiver: Receiver, reply: int, error: str, now: datetime
) -> None:
    protect(client, webhook_url=receiver.url)
    add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    receiver.replies = [reply]
    with session_scope() as session:
        record_events(session, settings_with(), now)
    deliver_due(session_scope, settings_with(), now)
    [row] = rows()
    assert row.status == "retrying" and error in (row.last_error or "")


def test_an_unreachable_receiver(client: TestClient, shop_backup: Backup, now: datetime) -> None:
    port = free_port()  # nothing listens there
    protect(client, webhook_url=f"http://127.0.0.1:{port}/hook")
    add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    with session_scope() as session:
        record_events(session, settings_with(), now)
    deliver_due(session_scope, settings_with(), now)
    [row] = rows()
    assert row.last_error == f"cannot reach http://127.0.0.1:{port}/…: [Errno 111] Connection refused"


def test_e_mail_goes_through_smtp(
    client: TestClient, shop_backup: Backup, smtp: tuple[Mailbox, int], now: datetime
) -> None:
    mailbox, port = smtp
    protect(client, email_to=["dba@example.com", "manager@example.com"])
    job_id = add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    settings = settings_with(smtp_host="127.0.0.1", smtp_port=port, smtp_from="restorescope@example.com")
    with session_scope() as session:
        record_events(session, settings, now)
        record_events(session, settings, now)
    deliver_due(session_scope, settings, now)
    deliver_due(session_scope, settings, now)
    [(recipients, raw)] = mailbox.messages
    assert recipients == ["dba@example.com", "manager@example.com"]
    message = message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)
    # Python folds a long Subject onto its own continuation line; unfolded, it reads in one piece.
    assert (
        message["Subject"].strip() == f"[restorescope] shop: restore job #{job_id} failed: the sandbox ran out of disk"
    )
    assert message["From"] == "restorescope@example.com"
    assert "error: the sandbox ran out of disk" in message.get_content()
    [row] = rows()
    assert row.channel == "email" and row.status == "sent" and row.destination == "dba@example.com, manager@example.com"


def test_e_mail_without_smtp_is_recorded_as_failed(client: TestClient, shop_backup: Backup, now: datetime) -> None:
    protect(client, email_to=["dba@example.com"])
    add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    with session_scope() as session:
        record_events(session, settings_with(smtp_host=""), now)
    [row] = client.get("/api/v1/notifications").json()["data"]
    assert row["status"] == "failed" and row["attempts"] == 0
    assert row["last_error"] == "e-mail is not configured on this server: set RESTORESCOPE_SMTP_HOST"


def test_an_unreachable_smtp_server(client: TestClient, shop_backup: Backup, now: datetime) -> None:
    port = free_port()
    protect(client, email_to=["dba@example.com"])
    add_restore(shop_backup, days_ago=0, restore_s=3, status="failed")
    settings = settings_with(smtp_host="127.0.0.1", smtp_port=port)
    with session_scope() as session:
        record_events(session, settings, now)
    deliver_due(session_scope, settings, now)
    [row] = rows()
    assert row.status == "retrying"
    assert row.last_error == f"cannot reach the SMTP server 127.0.0.1:{port}: [Errno 111] Connection refused"


def test_an_overdue_drill_and_an_rto_breach_are_told_once(
    client: TestClient, shop_backup: Backup, receiver: Receiver, now: datetime
) -> None:
    protected = protect(client, webhook_url=receiver.url, drill_schedule="0 * * * *", drill_grace_s=600, rto_s=1)
    add_restore(shop_backup, days_ago=1, restore_s=30)  # succeeded: the estimate is about 38 s, over the RTO
    with session_scope() as session:
        # As if protected two days ago, with no drill since: the latest hourly slot past its grace is overdue.
        session.execute(
            update(ProtectedDatabase).values(created_at=now - timedelta(days=2), schedule_since=now - timedelta(days=2))
        )
    status = client.get(f"/api/v1/protected-databases/{protected['id']}").json()["status"]
    assert status["overdue_since"] is not None and status["rto_state"] == "over"
    for _ in range(2):
        with session_scope() as session:
            record_events(session, settings_with(), now)
        deliver_due(session_scope, settings_with(), now)
    events = sorted(r.json["event"] for r in receiver.received)
    assert events == ["drill_overdue", "rto_breach"]
    breach = next(r.json for r in receiver.received if r.json["event"] == "rto_breach")
    assert breach["details"]["rto_s"] == 1 and breach["details"]["estimate_s"] == pytest.approx(38, abs=0.5)
    assert breach["summary"] == "shop: restoring the latest backup would take about 38 s, over the RTO of 1 s"
    overdue = next(r.json for r in receiver.received if r.json["event"] == "drill_overdue")
    assert overdue["details"]["scheduled_for"] == status["overdue_since"].replace("Z", "+00:00")
    # A new RTO is a new breach.
    client.patch(f"/api/v1/protected-databases/{protected['id']}", json={"rto_s": 2})
    with session_scope() as session:
        assert [n.event for n in record_events(session, settings_with(), now)] == ["rto_breach"]


def test_a_test_notification_goes_out_at_once(
    client: TestClient, receiver: Receiver, smtp: tuple[Mailbox, int]
) -> None:
    mailbox, port = smtp
    settings = settings_with(smtp_host="127.0.0.1", smtp_port=port)
    client.app.dependency_overrides[get_settings] = lambda: settings  # type: ignore[attr-defined]
    try:
        plain = protect(client)
        refused = client.post(f"/api/v1/protected-databases/{plain['id']}/notifications/test")
        assert refused.status_code == 422
        assert "has no webhook and no e-mail address: set one, then test it" in error_message(refused.json())
        protected = protect(client, name="shop 2", webhook_url=receiver.url, email_to=["dba@example.com"])
        response = client.post(f"/api/v1/protected-databases/{protected['id']}/notifications/test")
        assert response.status_code == 200, response.text
        assert sorted((n["channel"], n["status"]) for n in response.json()["data"]) == [
            ("email", "sent"),
            ("webhook", "sent"),
        ]
        assert receiver.received[0].json["event"] == "test" and len(mailbox.messages) == 1
        # A second test is a new event.
        client.post(f"/api/v1/protected-databases/{protected['id']}/notifications/test")
        assert len(receiver.received) == 2
    finally:
        client.app.dependency_overrides.clear()  # type: ignore[attr-defined]


def test_send_test_reports_a_failed_attempt(client: TestClient, receiver: Receiver, now: datetime) -> None:
    protected = protect(client, webhook_url=receiver.url)
    receiver.replies = [500]
    [result] = send_test(session_scope, protected["id"], settings_with(), now)
    assert result.status == "retrying" and "answered HTTP 500" in (result.last_error or "")
