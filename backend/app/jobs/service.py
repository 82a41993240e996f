"""Creating, listing, cancelling and retrying jobs. Services flush; the caller's unit of work commits."""

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.backups.detect import RESTORABLE_FORMATS
from app.backups.service import register_backup
from app.core.config import Settings
from app.core.errors import Conflict, InvalidRequest, NotFound
from app.jobs.log import add_log
from app.jobs.schemas import RestoreJobCreate, SandboxTargetSpec, ServerSnapshotPublic, ServerStatePublic
from app.models import Job, JobKind, JobLog, JobPhase, JobStatus, ServerSnapshot, Target, VerificationResult
from app.models.base import utcnow
from app.sandboxes.options import PRESETS, ServerOptions


def resolve_sandbox_options(spec: SandboxTargetSpec) -> ServerOptions:
    """The preset's settings with the ones the user set explicitly on top."""
    if spec.preset not in PRESETS:
        known = ", ".join(PRESETS)
        raise InvalidRequest(f"unknown preset '{spec.preset}'; choose one of: {known}", field="target.preset")
    base = PRESETS[spec.preset][1].model_dump()
    overrides = spec.options.model_dump(exclude_unset=True)
    return ServerOptions.model_validate({**base, **overrides})


def create_restore_job(session: Session, data: RestoreJobCreate, settings: Settings) -> Job:
    backup = register_backup(session, data.backup_path, settings.resolved_backup_roots)
    if backup.format not in RESTORABLE_FORMATS:
        raise InvalidRequest(
            f"{backup.path} is a {backup.format} backup; this version restores mysqldump files "
            f"(.sql, .sql.gz, .sql.zst) only",
            field="backup_path",
        )
    target: dict[str, Any]
    target_id: int | None = None
    if isinstance(data.target, SandboxTargetSpec):
        options = resolve_sandbox_options(data.target)
        target = {
            "kind": "sandbox",
            "preset": data.target.preset,
            "options": options.model_dump(),
            "keep": data.target.keep,
        }
    else:
        if session.get(Target, data.target.target_id) is None:
            raise InvalidRequest(f"no saved target with id {data.target.target_id}", field="target.target_id")
        target_id = data.target.target_id
        has_own_database = bool(backup.details.get("has_use_statements"))
        if not has_own_database and not data.database:
            raise InvalidRequest(
                "this dump does not create or choose its database: name the database to restore into",
                field="database",
            )
        target = {"kind": "saved", "target_id": target_id}
    job = Job(
        kind=JobKind.RESTORE,
        status=JobStatus.QUEUED,
        phase=JobPhase.QUEUED,
        parameters={
            "backup_path": backup.path,
            "backup_format": backup.format,
            "target": target,
            "database": data.database,
            "verify": data.verify,
            "capture": data.capture,
        },
        backup_id=backup.id,
        target_id=target_id,
        started_by=data.started_by,
        bytes_total=backup.size_bytes,
        phase_times={},
    )
    session.add(job)
    session.flush()
    add_log(session, job.id, f"queued: restore {backup.path} ({backup.format}, {backup.size_bytes} bytes)")
    return job


def get_job(session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job with id {job_id}")
    return job


def list_jobs(
    session: Session,
    *,
    statuses: list[str] | None = None,
    kind: str | None = None,
    backup_id: int | None = None,
    target_id: int | None = None,
    started_by: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    offset: int = 0,
    limit: int = 50,
) -> tuple[list[Job], int]:
    query = select(Job)
    if statuses:
        query = query.where(Job.status.in_(statuses))
    if kind:
        query = query.where(Job.kind == kind)
    if backup_id is not None:
        query = query.where(Job.backup_id == backup_id)
    if target_id is not None:
        query = query.where(Job.target_id == target_id)
    if started_by:
        query = query.where(Job.started_by == started_by)
    if created_after:
        query = query.where(Job.created_at >= created_after)
    if created_before:
        query = query.where(Job.created_at < created_before)
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(query.order_by(Job.created_at.desc(), Job.id.desc()).offset(offset).limit(limit))
    return list(page), count


def request_cancel(session: Session, job_id: int) -> Job:
    job = get_job(session, job_id)
    if JobStatus(job.status).is_final:
        raise Conflict(f"job {job_id} already ended ({job.status}); nothing to cancel")
    now = utcnow()
    job.cancel_requested_at = job.cancel_requested_at or now
    if job.status == JobStatus.QUEUED:
        # No worker holds it yet: the worker that picks the message up will find it cancelled and skip it.
        job.status, job.phase, job.finished_at = JobStatus.CANCELLED, JobPhase.DONE, now
        add_log(session, job.id, "cancelled before it started")
    else:
        add_log(session, job.id, "cancel requested: stopping the job's processes")
    session.flush()
    return job


def retry_job(session: Session, job_id: int, started_by: str | None = None) -> Job:
    original = get_job(session, job_id)
    if original.kind == JobKind.IMPORT:
        raise Conflict(f"job {job_id} is an imported trace and has nothing to run again: upload the log again")
    if not JobStatus(original.status).is_final:
        raise Conflict(f"job {job_id} is still {original.status}; cancel it or wait for it to end before retrying")
    job = Job(
        kind=original.kind,
        status=JobStatus.QUEUED,
        phase=JobPhase.QUEUED,
        parameters=dict(original.parameters),
        backup_id=original.backup_id,
        target_id=original.target_id,
        parent_id=original.id,
        started_by=started_by or original.started_by,
        bytes_total=original.bytes_total,
        phase_times={},
    )
    session.add(job)
    session.flush()
    add_log(session, job.id, f"queued: retry of job {original.id}")
    return job


def read_logs(session: Session, job_id: int, after_id: int = 0, limit: int = 500) -> list[JobLog]:
    get_job(session, job_id)
    query = select(JobLog).where(JobLog.job_id == job_id, JobLog.id > after_id).order_by(JobLog.id).limit(limit)
    return list(session.scalars(query))


def read_verification(session: Session, job_id: int) -> list[VerificationResult]:
    query = select(VerificationResult).where(VerificationResult.job_id == job_id)
    return list(session.scalars(query.order_by(VerificationResult.database, VerificationResult.table)))


def read_server_state(session: Session, job_id: int) -> ServerStatePublic:
    get_job(session, job_id)
    snapshots = list(
        session.scalars(select(ServerSnapshot).where(ServerSnapshot.job_id == job_id).order_by(ServerSnapshot.id))
    )
    by_moment = {s.moment: s for s in snapshots}
    delta: dict[str, float] = {}
    if "start" in by_moment and "end" in by_moment:
        start, end = by_moment["start"].status, by_moment["end"].status
        for name, end_value in end.items():
            try:
                delta[name] = float(end_value) - float(start.get(name, "0"))
            except ValueError:
                continue
    return ServerStatePublic(
        snapshots=[
            ServerSnapshotPublic(moment=s.moment, taken_at=s.taken_at, variables=s.variables, status=s.status)
            for s in snapshots
        ],
        status_delta=delta,
    )
