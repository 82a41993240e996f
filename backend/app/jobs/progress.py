"""Rates and estimates derived from a job's counters; pure, so they are tested with plain numbers."""

from datetime import datetime

from app.jobs.schemas import JobPublic
from app.models import Job, JobPhase, JobStatus

MB = 1_000_000


def _phase_start(job: Job, phase: JobPhase) -> datetime | None:
    times = job.phase_times.get(phase)
    return datetime.fromisoformat(times[0]) if times and times[0] else None


def rates(job: Job) -> tuple[float | None, float | None, float | None]:
    """(MB/s, rows/s, seconds left) over the restoring (backing up, or a physical backup's preparing) phase so far."""
    start = (
        _phase_start(job, JobPhase.RESTORING)
        or _phase_start(job, JobPhase.BACKING_UP)
        or _phase_start(job, JobPhase.PREPARING)
    )
    if start is None or job.progress_at is None:
        return None, None, None
    elapsed = (job.progress_at - start).total_seconds()
    if elapsed <= 0:
        return None, None, None
    bytes_per_s = job.bytes_done / elapsed
    eta = None
    if job.bytes_total and bytes_per_s > 0 and job.status == JobStatus.RUNNING:
        eta = max(job.bytes_total - job.bytes_done, 0) / bytes_per_s
    return bytes_per_s / MB, job.rows_done / elapsed, eta


def percent(job: Job) -> float | None:
    if not job.bytes_total:
        return None
    return min(100.0, 100.0 * job.bytes_done / job.bytes_total)


def duration_s(job: Job, now: datetime) -> float | None:
    if job.started_at is None:
        return None
    return ((job.finished_at or now) - job.started_at).total_seconds()


def to_public(job: Job, now: datetime) -> JobPublic:
    mb_per_s, rows_per_s, eta_s = rates(job)
    return JobPublic(
        id=job.id,
        kind=job.kind,
        status=job.status,
        phase=job.phase,
        parameters=job.parameters,
        backup_id=job.backup_id,
        backup_path=job.parameters.get("backup_path"),
        target_id=job.target_id,
        parent_id=job.parent_id,
        started_by=job.started_by,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        heartbeat_at=job.heartbeat_at,
        cancel_requested=job.cancel_requested_at is not None,
        phase_times=job.phase_times,
        bytes_total=job.bytes_total,
        bytes_done=job.bytes_done,
        rows_done=job.rows_done,
        percent=percent(job),
        mb_per_s=mb_per_s,
        rows_per_s=rows_per_s,
        eta_s=eta_s,
        duration_s=duration_s(job, now),
        worker=job.worker,
        server_flavour=job.server_flavour,
        server_version=job.server_version,
        sandbox_port=job.sandbox_port,
        sandbox_dir=job.sandbox_dir,
        sandbox_kept=job.sandbox_kept,
        error=job.error,
        backup_verdict=job.backup_verdict,
        run_facts=job.run_facts or {},
    )
