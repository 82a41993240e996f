"""Drills: a restore-and-verify of a protected database's latest backup into a sandbox, on its schedule or by
hand. Services flush; the caller commits, then enqueues the drill's job."""

from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.audit.service import record
from app.backups.service import scan_backups
from app.core.config import Settings
from app.core.errors import Conflict, DomainError
from app.drills.schedule import Schedule, ScheduleError, due_slot, overdue_slot, parse_schedule
from app.jobs.log import add_log
from app.jobs.schemas import RestoreJobCreate, SandboxTargetSpec
from app.jobs.service import create_restore_job
from app.models import ACTIVE_STATUSES, AuditAction, Backup, Drill, Job, ProtectedDatabase, User
from app.protected.schemas import DrillPublic
from app.protected.selection import latest
from app.protected.service import backups_of

DRILL_STARTED_BY = "drill"


def drill_public(drill: Drill, protected_name: str, job: Job | None, backup: Backup | None) -> DrillPublic:
    duration = None
    if job is not None and job.started_at is not None and job.finished_at is not None:
        duration = (job.finished_at - job.started_at).total_seconds()
    return DrillPublic(
        id=drill.id,
        protected_database_id=drill.protected_database_id,
        protected_database_name=protected_name,
        trigger="schedule" if drill.trigger == "schedule" else "manual",
        scheduled_for=drill.scheduled_for,
        created_at=drill.created_at,
        job_id=drill.job_id,
        status=job.status if job is not None else "failed",
        error=drill.error or (job.error if job is not None else None),
        backup_path=backup.path if backup is not None else None,
        started_at=job.started_at if job is not None else None,
        finished_at=job.finished_at if job is not None else drill.created_at,
        duration_s=duration,
        backup_verdict=job.backup_verdict if job is not None else None,
    )


def list_drills(
    session: Session, protected_id: int | None = None, offset: int = 0, limit: int = 50
) -> tuple[list[DrillPublic], int]:
    """Drills newest first, with their job's outcome."""
    query = (
        select(Drill, ProtectedDatabase.name, Job, Backup)
        .join(ProtectedDatabase, ProtectedDatabase.id == Drill.protected_database_id)
        .outerjoin(Job, Job.id == Drill.job_id)
        .outerjoin(Backup, Backup.id == Drill.backup_id)
    )
    counted = select(func.count()).select_from(Drill)
    if protected_id is not None:
        query = query.where(Drill.protected_database_id == protected_id)
        counted = counted.where(Drill.protected_database_id == protected_id)
    rows = session.execute(query.order_by(Drill.created_at.desc(), Drill.id.desc()).offset(offset).limit(limit))
    return [drill_public(*row) for row in rows], session.scalar(counted) or 0


def active_drill_job_id(session: Session, protected_id: int) -> int | None:
    """The job of a drill of this database that is queued or running, if any."""
    return session.scalar(
        select(Job.id)
        .join(Drill, Drill.job_id == Job.id)
        .where(Drill.protected_database_id == protected_id, Job.status.in_(ACTIVE_STATUSES))
        .limit(1)
    )


def last_scheduled_for(session: Session, protected_id: int) -> datetime | None:
    return session.scalar(select(func.max(Drill.scheduled_for)).where(Drill.protected_database_id == protected_id))


def last_started_at(session: Session, protected_id: int) -> datetime | None:
    """When the latest drill started: its job's start, or for a drill that made no job, when it failed."""
    job_start = session.scalar(
        select(func.max(Job.started_at))
        .join(Drill, Drill.job_id == Job.id)
        .where(Drill.protected_database_id == protected_id)
    )
    jobless = session.scalar(
        select(func.max(Drill.created_at)).where(Drill.protected_database_id == protected_id, Drill.job_id.is_(None))
    )
    known = [t for t in (job_start, jobless) if t is not None]
    return max(known) if known else None


def schedule_of(protected: ProtectedDatabase) -> Schedule | None:
    """The database's drill schedule; None without one, or when the time zone went away from this host's
    time zone database since it was saved."""
    if not protected.drill_schedule:
        return None
    try:
        return parse_schedule(protected.drill_schedule, protected.drill_timezone)
    except ScheduleError:
        return None


def overdue_since(session: Session, protected: ProtectedDatabase, now: datetime) -> datetime | None:
    schedule = schedule_of(protected)
    if schedule is None:
        return None
    return overdue_slot(
        schedule,
        since=protected.schedule_since,
        last_started=last_started_at(session, protected.id),
        now=now,
        grace=timedelta(seconds=protected.drill_grace_s),
    )


def start_drill(
    session: Session,
    protected: ProtectedDatabase,
    settings: Settings,
    *,
    trigger: str,
    actor: User | None,
    scheduled_for: datetime | None = None,
) -> Drill:
    """Queue a restore-and-verify of the latest backup into a sandbox. A drill that cannot restore anything (no
    backup, the latest one gone from disk, a backup restorescope cannot restore) is recorded as failed, with why.
    Refused while another drill of the database is queued or running. `actor` is who asked; None for the
    scheduler, which the job and the audit log name "drill"."""
    active = active_drill_job_id(session, protected.id)
    if active is not None:
        raise Conflict(
            f"a drill of {protected.name} is already queued or running (job {active}): wait for it to end",
            field="protected_database_id",
        )
    scan_backups(session, settings.resolved_backup_roots)
    backups = backups_of(session, protected)
    newest = latest(backups)
    drill = Drill(protected_database_id=protected.id, trigger=trigger, scheduled_for=scheduled_for)
    if newest is None:
        drill.error = _no_backup_message(protected)
    elif newest.missing or not Path(newest.path).exists():
        drill.backup_id = newest.id
        drill.error = (
            f"the latest backup of {protected.name}, {newest.path} (modified "
            f"{newest.modified_at:%Y-%m-%d %H:%M} UTC, last seen {newest.last_seen_at:%Y-%m-%d %H:%M} UTC), is no "
            "longer on disk: it was deleted or moved. Nothing was restored; make a new backup, or find out what "
            "removed it"
        )
    else:
        drill.backup_id = newest.id
        try:
            job = _drill_job(session, protected, newest, settings, actor)
            drill.job_id = job.id
        except DomainError as error:
            drill.error = f"the latest backup of {protected.name}, {newest.path}, cannot be restored: {error.message}"
    session.add(drill)
    session.flush()
    outcome = f"job {drill.job_id}" if drill.job_id is not None else f"failed: {drill.error}"
    record(
        session,
        AuditAction.DRILL_START,
        actor,
        username=DRILL_STARTED_BY,
        object_type="protected_database",
        object_id=protected.id,
        detail=f"{trigger} drill {drill.id} of {protected.name}"
        + (f" for {scheduled_for.isoformat()}" if scheduled_for else "")
        + f": {outcome}",
    )
    return drill


def _drill_job(
    session: Session, protected: ProtectedDatabase, backup: Backup, settings: Settings, actor: User | None
) -> Job:
    job = create_restore_job(
        session,
        RestoreJobCreate(
            backup_path=backup.path,
            target=SandboxTargetSpec(preset=protected.drill_preset),
            verify=True,
            # Drills measure restore speed for the trends: no IO capture slowing them down.
            capture="none",
            runner="auto",
        ),
        settings,
        actor,
        started_by=DRILL_STARTED_BY,
    )
    # Read by the worker: one drill of a database at a time (worker.target_lock.drill_lock).
    job.parameters = {**job.parameters, "drill": {"protected_database_id": protected.id, "name": protected.name}}
    add_log(session, job.id, f"drill of {protected.name}: restore and verify its latest backup in a sandbox")
    session.flush()
    return job


def _no_backup_message(protected: ProtectedDatabase) -> str:
    how = [f"holds the database `{protected.database}`"]
    if protected.backup_glob:
        how.append(f"matches {protected.backup_glob}")
    if protected.source_target_id is not None:
        how.append(f"was written by a backup job of saved server {protected.source_target_id}")
    return (
        f"no backup of {protected.name} found under the backup roots (none that {' and '.join(how)}): nothing to "
        "restore. Back it up, or correct the database name, pattern or source server"
    )


def start_due_drill(session: Session, protected: ProtectedDatabase, settings: Settings, now: datetime) -> Drill | None:
    """The drill of the database's current slot, if the slot has none yet and no drill of it is running (then
    the slot waits for it to end; overdue_since says if it waits too long)."""
    schedule = schedule_of(protected)
    if schedule is None:
        return None
    slot = due_slot(
        schedule, since=protected.schedule_since, last_scheduled=last_scheduled_for(session, protected.id), now=now
    )
    if slot is None or active_drill_job_id(session, protected.id) is not None:
        return None
    return start_drill(session, protected, settings, trigger="schedule", actor=None, scheduled_for=slot)
