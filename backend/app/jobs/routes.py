import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from app.api.deps import OperatorUser, SessionDep, SettingsDep
from app.core.db import session_scope
from app.core.queue import enqueue_job
from app.jobs import service
from app.jobs.progress import to_public
from app.jobs.schemas import (
    BackupJobCreate,
    JobDetail,
    JobLogPublic,
    JobLogsPublic,
    JobPublic,
    JobsPublic,
    RestoreJobCreate,
    ServerStatePublic,
    VerificationPublic,
)
from app.models import Job, JobLog, JobStatus
from app.models.base import utcnow

router = APIRouter(prefix="/jobs", tags=["jobs"])


def _detail(session: SessionDep, job: Job) -> JobDetail:
    verification = [
        VerificationPublic(
            database=v.database,
            table=v.table,
            check=v.check,
            expected=v.expected,
            actual=v.actual,
            ok=v.ok,
            detail=v.detail,
        )
        for v in service.read_verification(session, job.id)
    ]
    return JobDetail(**to_public(job, utcnow()).model_dump(), verification=verification)


def _log_public(line: JobLog) -> JobLogPublic:
    return JobLogPublic(
        id=line.id, created_at=line.created_at, level=line.level, source=line.source, message=line.message
    )


@router.get("", operation_id="jobs-read_jobs")
def read_jobs(
    session: SessionDep,
    job_status: Annotated[list[str] | None, Query(alias="status")] = None,
    kind: str | None = None,
    backup_id: int | None = None,
    target_id: int | None = None,
    started_by: Annotated[str | None, Query(description="Only jobs this user started")] = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> JobsPublic:
    """Jobs, newest first, filtered and paged."""
    jobs, count = service.list_jobs(
        session,
        statuses=job_status,
        kind=kind,
        backup_id=backup_id,
        target_id=target_id,
        started_by=started_by,
        created_after=created_after,
        created_before=created_before,
        offset=offset,
        limit=limit,
    )
    now = utcnow()
    return JobsPublic(data=[to_public(j, now) for j in jobs], count=count)


@router.post("/restore", status_code=status.HTTP_201_CREATED, operation_id="jobs-create_restore_job")
def create_restore_job(
    session: SessionDep, settings: SettingsDep, user: OperatorUser, data: RestoreJobCreate
) -> JobDetail:
    """Queue a restore of a backup into a sandbox server or a saved server (operator)."""
    job = service.create_restore_job(session, data, settings, user)
    session.commit()
    enqueue_job(job.kind, job.id)
    return _detail(session, job)


@router.post("/backup", status_code=status.HTTP_201_CREATED, operation_id="jobs-create_backup_job")
def create_backup_job(
    session: SessionDep, settings: SettingsDep, user: OperatorUser, data: BackupJobCreate
) -> JobDetail:
    """Queue a backup of a saved server into a new directory under a backup root (operator)."""
    job = service.create_backup_job(session, data, settings, user)
    session.commit()
    enqueue_job(job.kind, job.id)
    return _detail(session, job)


@router.get("/{job_id}", operation_id="jobs-read_job")
def read_job(session: SessionDep, job_id: int) -> JobDetail:
    """One job with its progress, outcome and per-table verification."""
    return _detail(session, service.get_job(session, job_id))


@router.post("/{job_id}/cancel", operation_id="jobs-cancel_job")
def cancel_job(session: SessionDep, user: OperatorUser, job_id: int) -> JobDetail:
    """Stop a queued or running job; its processes are killed and its sandbox removed (operator)."""
    return _detail(session, service.request_cancel(session, job_id, user))


@router.post("/{job_id}/retry", status_code=status.HTTP_201_CREATED, operation_id="jobs-retry_job")
def retry_job(session: SessionDep, user: OperatorUser, job_id: int) -> JobDetail:
    """Queue a new job with the same parameters; the new job names this one as its parent (operator)."""
    job = service.retry_job(session, job_id, user)
    session.commit()
    enqueue_job(job.kind, job.id)
    return _detail(session, job)


@router.get("/{job_id}/logs", operation_id="jobs-read_job_logs")
def read_job_logs(
    session: SessionDep,
    job_id: int,
    after_id: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> JobLogsPublic:
    """Log lines of a job after a given line id."""
    lines = service.read_logs(session, job_id, after_id, limit)
    return JobLogsPublic(data=[_log_public(x) for x in lines], next_after_id=lines[-1].id if lines else after_id)


@router.get("/{job_id}/server", operation_id="jobs-read_job_server_state")
def read_job_server_state(session: SessionDep, job_id: int) -> ServerStatePublic:
    """SHOW GLOBAL VARIABLES and STATUS of the job's server at start and end, and the status deltas."""
    return service.read_server_state(session, job_id)


def _poll(job_id: int, after_id: int) -> tuple[JobPublic, list[JobLogPublic]]:
    with session_scope() as session:
        job = service.get_job(session, job_id)
        lines = service.read_logs(session, job_id, after_id)
        return to_public(job, utcnow()), [_log_public(x) for x in lines]


@router.get("/{job_id}/events", operation_id="jobs-stream_job_events", response_class=EventSourceResponse)
async def stream_job_events(
    session: SessionDep, request: Request, job_id: int, after_id: int = 0
) -> EventSourceResponse:
    """Server-sent events: "job" with progress whenever it changes, "log" per new line, "end" when it ends."""
    service.get_job(session, job_id)
    session.close()

    async def events() -> AsyncIterator[ServerSentEvent]:
        last_log_id, last_job = after_id, ""
        while not await request.is_disconnected():
            job, lines = await run_in_threadpool(_poll, job_id, last_log_id)
            for line in lines:
                last_log_id = line.id
                yield ServerSentEvent(data=line.model_dump_json(), event="log", id=str(line.id))
            snapshot = job.model_dump_json()
            if snapshot != last_job:
                last_job = snapshot
                yield ServerSentEvent(data=snapshot, event="job")
            if JobStatus(job.status).is_final and not lines:
                yield ServerSentEvent(data=json.dumps({"status": job.status}), event="end")
                return
            await asyncio.sleep(0.5)

    return EventSourceResponse(events(), ping=15)
