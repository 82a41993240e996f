"""Notifications: finding events, recording each once per channel, and delivering them with retries.

Recording and delivering are separate steps: an event is written as one row per channel (webhook, e-mail) whose
(event_key, channel) is unique, so however often the scheduler looks, it is sent once; delivery then claims a
row, makes one attempt outside any transaction, and records the outcome: sent, retrying later (with a growing
delay), or failed for good after the last attempt. Every failed attempt is logged and kept on the row.
"""

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.security import decrypt_secret
from app.drills.schedule import describe
from app.drills.service import schedule_of
from app.models import DeliveryStatus, Drill, Job, JobKind, JobStatus, Notification, ProtectedDatabase
from app.notifications import events as ev
from app.notifications.delivery import DeliveryError, SmtpServer, post_webhook, redact_url, send_email
from app.trends.service import Assessment, assess_all

log = logging.getLogger("restorescope.notifications")

# Failures older than this are not news any more (and the look-back stays cheap).
LOOKBACK = timedelta(days=7)
# A row claimed for sending by a worker that died is taken again after this long.
STALE_CLAIM = timedelta(minutes=10)

SessionFactory = Callable[[], AbstractContextManager[Session]]


def _job_link(settings: Settings, job_id: int) -> str | None:
    return f"{settings.public_url.rstrip('/')}/jobs/{job_id}" if settings.public_url else None


def _since(protected: ProtectedDatabase, now: datetime) -> datetime:
    return max(protected.created_at, now - LOOKBACK)


def events_of(session: Session, assessment: Assessment, settings: Settings, now: datetime) -> Iterator[ev.Event]:
    protected = assessment.protected
    ident = (protected.id, protected.name, protected.database)
    since = _since(protected, now)
    for point in assessment.points:
        run = point.run
        if run.job_id is not None and run.status == JobStatus.FAILED and point.at >= since:
            link = _job_link(settings, run.job_id)
            yield ev.job_failed(*ident, run.job_id, JobKind.RESTORE, run.error, point.at, link)
    if protected.source_target_id is not None:
        backups = session.scalars(
            select(Job).where(
                Job.kind == JobKind.BACKUP,
                Job.status == JobStatus.FAILED,
                Job.target_id == protected.source_target_id,
                Job.finished_at >= since,
            )
        )
        for job in backups:
            databases = job.parameters.get("databases") or []
            if not databases or protected.database in databases:
                at = job.finished_at or now
                yield ev.job_failed(*ident, job.id, JobKind.BACKUP, job.error, at, _job_link(settings, job.id))
    jobless = session.scalars(
        select(Drill).where(
            Drill.protected_database_id == protected.id, Drill.job_id.is_(None), Drill.created_at >= since
        )
    )
    for drill in jobless:
        yield ev.drill_failed(*ident, drill.id, drill.error or "no reason recorded", drill.created_at)
    schedule = schedule_of(protected)
    if assessment.status.overdue_since is not None and schedule is not None:
        grace = timedelta(seconds=protected.drill_grace_s)
        yield ev.drill_overdue(*ident, assessment.status.overdue_since, grace, describe(schedule), now)
    if assessment.rto == "over" and assessment.estimate is not None and assessment.latest_backup is not None:
        yield ev.rto_breach(
            *ident,
            backup_id=assessment.latest_backup.id,
            backup_path=assessment.latest_backup.path,
            estimate_s=assessment.estimate.seconds,
            rto_s=protected.rto_s,
            method=assessment.estimate.method.label,
            now=now,
        )


def collect_events(session: Session, settings: Settings, now: datetime) -> list[ev.Event]:
    return [e for assessment in assess_all(session, now) for e in events_of(session, assessment, settings, now)]


def record(
    session: Session, event: ev.Event, protected: ProtectedDatabase, settings: Settings, now: datetime
) -> list[Notification]:
    """One row per channel the database has, unless the event was recorded before. E-mail without SMTP set up on
    this server is recorded as failed, so the settings problem shows in the deliveries list."""
    channels: list[tuple[str, str, str | None]] = []
    if protected.webhook_url:
        channels.append(("webhook", redact_url(protected.webhook_url), None))
    if protected.email_to:
        problem = None if settings.smtp_host else "e-mail is not configured on this server: set RESTORESCOPE_SMTP_HOST"
        channels.append(("email", ", ".join(protected.email_to), problem))
    made = []
    for channel, destination, problem in channels:
        known = session.scalar(
            select(Notification.id).where(Notification.event_key == event.key, Notification.channel == channel)
        )
        if known is not None:
            continue
        notification = Notification(
            protected_database_id=protected.id,
            event=event.kind,
            event_key=event.key,
            channel=channel,
            destination=destination,
            payload=ev.payload(event),
            status=DeliveryStatus.FAILED if problem else DeliveryStatus.PENDING,
            last_error=problem,
            attempts=0,
            created_at=now,
            next_attempt_at=now,
        )
        try:
            with session.begin_nested():
                session.add(notification)
        except IntegrityError:
            continue  # recorded by another scheduler at the same moment
        if problem:
            log.warning("notification %s (%s) not sent: %s", event.key, channel, problem)
        made.append(notification)
    session.flush()
    return made


def record_events(session: Session, settings: Settings, now: datetime) -> list[Notification]:
    made = []
    for event in collect_events(session, settings, now):
        protected = session.get(ProtectedDatabase, event.protected_database_id)
        if protected is not None:
            made += record(session, event, protected, settings, now)
    return made


def due_ids(session: Session, now: datetime, limit: int = 100) -> list[int]:
    return list(
        session.scalars(
            select(Notification.id)
            .where(
                or_(
                    Notification.status.in_((DeliveryStatus.PENDING, DeliveryStatus.RETRYING)),
                    Notification.status == DeliveryStatus.SENDING,  # a claim that outlived its worker
                ),
                Notification.next_attempt_at <= now,
            )
            .order_by(Notification.next_attempt_at, Notification.id)
            .limit(limit)
        )
    )


def _claim(session: Session, notification_id: int, now: datetime) -> bool:
    result = session.execute(
        update(Notification)
        .where(
            Notification.id == notification_id,
            Notification.status.in_((DeliveryStatus.PENDING, DeliveryStatus.RETRYING, DeliveryStatus.SENDING)),
            Notification.next_attempt_at <= now,
        )
        .values(
            status=DeliveryStatus.SENDING,
            attempts=Notification.attempts + 1,
            next_attempt_at=now + STALE_CLAIM,
        )
    )
    return bool(getattr(result, "rowcount", 0) == 1)


def deliver_one(
    sessions: SessionFactory, notification_id: int, settings: Settings, now: datetime
) -> Notification | None:
    """Claim, attempt and record one delivery; None when someone else claimed it first."""
    with sessions() as session:
        if not _claim(session, notification_id, now):
            return None
        notification = session.get(Notification, notification_id)
        assert notification is not None
        protected = (
            session.get(ProtectedDatabase, notification.protected_database_id)
            if notification.protected_database_id is not None
            else None
        )
        # The webhook's address as the database has it now (it may hold a token: rows keep it redacted), so a
        # corrected address takes effect on the next retry.
        url = protected.webhook_url if protected is not None else None
        secret_blob = protected.webhook_secret_encrypted if protected is not None else None
        channel, destination, attempt = notification.channel, notification.destination, notification.attempts
        body = {
            **notification.payload,
            "delivery": {"id": notification_id, "attempt": attempt, "sent_at": now.isoformat()},
        }
    note = None
    try:
        if channel == "webhook":
            if not url:
                raise DeliveryError("the protected database has no webhook any more")
            post_webhook(
                url,
                json.dumps(body, sort_keys=True).encode(),
                event=str(body["event"]),
                delivery_id=notification_id,
                secret=decrypt_secret(secret_blob) if secret_blob else None,
                timeout_s=settings.notify_timeout_s,
            )
        else:
            note = send_email(
                _smtp(settings),
                [a.strip() for a in destination.split(",")],
                ev.email_subject(body),
                ev.email_text(body),
                timeout_s=settings.notify_timeout_s,
            )
        error = None
    except DeliveryError as failure:
        error = str(failure)
    with sessions() as session:
        notification = session.get(Notification, notification_id)
        assert notification is not None
        if error is None:
            notification.status, notification.sent_at, notification.last_error = DeliveryStatus.SENT, now, note
        elif attempt >= settings.notify_max_attempts:
            notification.status, notification.last_error = DeliveryStatus.FAILED, error
            log.error(
                "notification %s (%s) failed for good after %s attempts: %s",
                notification.event_key,
                channel,
                attempt,
                error,
            )
        else:
            delay = ev.retry_delay(attempt, settings.notify_retry_base_s)
            notification.status, notification.last_error = DeliveryStatus.RETRYING, error
            notification.next_attempt_at = now + delay
            log.warning(
                "notification %s (%s) attempt %s failed, trying again in %s: %s",
                notification.event_key,
                channel,
                attempt,
                delay,
                error,
            )
        session.flush()
        session.expunge(notification)
        return notification


def _smtp(settings: Settings) -> SmtpServer:
    if not settings.smtp_host:
        raise DeliveryError("e-mail is not configured on this server: set RESTORESCOPE_SMTP_HOST")
    return SmtpServer(
        settings.smtp_host,
        settings.smtp_port,
        settings.smtp_from,
        settings.smtp_user,
        settings.smtp_password.get_secret_value(),
        settings.smtp_starttls,
    )


def deliver_due(sessions: SessionFactory, settings: Settings, now: datetime) -> list[Notification]:
    with sessions() as session:
        ids = due_ids(session, now)
    delivered = [deliver_one(sessions, i, settings, now) for i in ids]
    return [n for n in delivered if n is not None]


def send_test(sessions: SessionFactory, protected_id: int, settings: Settings, now: datetime) -> list[Notification]:
    """A test event through every channel of the database, delivered now (failed attempts retry as usual)."""
    with sessions() as session:
        protected = session.get(ProtectedDatabase, protected_id)
        assert protected is not None
        event = ev.test_event(protected.id, protected.name, protected.database, uuid.uuid4().hex[:12], now)
        ids = [n.id for n in record(session, event, protected, settings, now)]
    results = []
    for notification_id in ids:
        delivered = deliver_one(sessions, notification_id, settings, now)
        if delivered is None:
            with sessions() as session:
                delivered = session.get(Notification, notification_id)
                assert delivered is not None
                session.expunge(delivered)
        results.append(delivered)
    return results


def list_notifications(
    session: Session, protected_id: int | None, status: str | None, offset: int, limit: int
) -> tuple[list[Notification], int]:
    query = select(Notification)
    if protected_id is not None:
        query = query.where(Notification.protected_database_id == protected_id)
    if status:
        query = query.where(Notification.status == status)
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(
        query.order_by(Notification.created_at.desc(), Notification.id.desc()).offset(offset).limit(limit)
    )
    return list(rows), count
