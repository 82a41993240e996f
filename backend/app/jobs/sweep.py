"""Jobs whose worker died stop being "running": their heartbeat goes stale and the sweep fails them."""

from datetime import timedelta

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app.jobs.log import add_log
from app.models import Job, JobPhase, JobStatus
from app.models.base import utcnow


def fail_dead_jobs(session: Session, heartbeat_timeout_s: float) -> list[int]:
    now = utcnow()
    cutoff = now - timedelta(seconds=heartbeat_timeout_s)
    stale = session.scalars(
        select(Job)
        .where(Job.status == JobStatus.RUNNING)
        .where(or_(Job.heartbeat_at < cutoff, Job.heartbeat_at.is_(None) & (Job.started_at < cutoff)))
        .with_for_update(skip_locked=True)
    ).all()
    for job in stale:
        last = job.heartbeat_at.isoformat(timespec="seconds") if job.heartbeat_at else "never"
        job.status, job.phase, job.finished_at = JobStatus.FAILED, JobPhase.DONE, now
        job.error = (
            f"the worker running this job ({job.worker or 'unknown'}) stopped sending heartbeats "
            f"(last: {last}): it was killed or crashed. Its processes died with it and its sandbox is removed "
            f"by the next sweep; retry the job."
        )
        add_log(session, job.id, job.error, level="error")
    session.flush()
    return [job.id for job in stale]
