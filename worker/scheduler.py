"""The scheduler's tick, sent by Celery beat every drill_tick_s: start the drills that are due, then record the
events worth telling (failed jobs, failed or overdue drills, RTO breaches) and deliver the notifications due.

Ticks never overlap (a Redis lock): a slow webhook delays the next tick instead of doubling the deliveries.
A tick waits in the queue like any task when every worker process is busy; its message expires after one tick
interval, so a backlog of ticks is never run (the next tick does the same work).
"""

import logging
import uuid

import redis
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.core.queue import enqueue_job
from app.drills.service import start_due_drill
from app.models import JobKind, ProtectedDatabase
from app.models.base import utcnow
from app.notifications.service import deliver_due, record_events

log = logging.getLogger("restorescope.scheduler")

TICK_LOCK_KEY = "restorescope:scheduler-tick"
_RELEASE_IF_OURS = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def tick() -> None:
    settings = get_settings()
    client = redis.Redis.from_url(settings.redis_url)
    token = uuid.uuid4().hex
    # Long enough for a tick that delivers a full batch to receivers that each time out.
    ttl_s = int(60 + 20 * settings.notify_timeout_s)
    with client:
        if not client.set(TICK_LOCK_KEY, token, nx=True, ex=ttl_s):
            log.info("tick skipped: the previous one is still running")
            return
        try:
            start_due_drills(settings)
            with session_scope() as session:
                recorded = record_events(session, settings, utcnow())
            if recorded:
                log.info("recorded %s notifications: %s", len(recorded), [n.event_key for n in recorded])
            deliver_due(session_scope, settings, utcnow())
        finally:
            client.eval(_RELEASE_IF_OURS, 1, TICK_LOCK_KEY, token)


def start_due_drills(settings: Settings) -> list[int]:
    """Start each scheduled database's drill when its slot has come; returns the drills' jobs."""
    with session_scope() as session:
        scheduled = list(
            session.scalars(select(ProtectedDatabase.id).where(ProtectedDatabase.drill_schedule.is_not(None)))
        )
    started = []
    for protected_id in scheduled:
        try:
            with session_scope() as session:
                protected = session.get(ProtectedDatabase, protected_id)
                drill = start_due_drill(session, protected, settings, utcnow()) if protected is not None else None
                job_id = drill.job_id if drill is not None else None
                if drill is not None:
                    log.info(
                        "drill %s of %s for %s: %s",
                        drill.id,
                        protected_id,
                        drill.scheduled_for,
                        f"job {job_id}" if job_id else drill.error,
                    )
        except IntegrityError:
            continue  # another scheduler made this slot's drill at the same moment
        except Exception:
            # One database's problem must not keep the others' drills from starting.
            log.exception("could not start the drill of protected database %s", protected_id)
            continue
        if job_id is not None:
            enqueue_job(JobKind.RESTORE, job_id)
            started.append(job_id)
    return started
