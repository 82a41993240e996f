"""Trends of each protected database, read from the job store: its restore runs, measured and flagged by
app.trends.analysis, its latest backup's estimated restore time against its RTO, and its drills' state."""

import csv
import io
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.drills.schedule import describe, next_slot
from app.drills.service import active_drill_job_id, drill_public, overdue_since, schedule_of
from app.models import Backup, Drill, Job, JobKind, JobStatus, ProtectedDatabase
from app.protected.schemas import BackupRef, DrillPublic, EstimatePublic, ProtectionStatus
from app.protected.selection import latest
from app.protected.service import backups_of
from app.trends.analysis import (
    Day,
    Estimate,
    Method,
    RtoState,
    RunPoint,
    RunRecord,
    analyse,
    estimate_restore,
    restoring_method,
    rto_state,
    status_strip,
)

FINAL_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
MB = 1_000_000


@dataclass
class Assessment:
    protected: ProtectedDatabase
    backups: list[Backup]
    latest_backup: Backup | None
    points: list[RunPoint]
    estimate: Estimate | None
    rto: RtoState
    status: ProtectionStatus


def run_records(session: Session, protected: ProtectedDatabase, backups: list[Backup]) -> list[RunRecord]:
    """Every finished restore of the database's backups, and its drills that could not restore anything."""
    by_id = {b.id: b for b in backups}
    drill_jobs = set(
        session.scalars(
            select(Drill.job_id).where(Drill.protected_database_id == protected.id, Drill.job_id.is_not(None))
        )
    )
    jobs = session.scalars(
        select(Job).where(Job.kind == JobKind.RESTORE, Job.backup_id.in_(list(by_id)), Job.status.in_(FINAL_STATUSES))
    )
    records = []
    for job in jobs:
        backup = by_id[job.backup_id] if job.backup_id is not None else None
        parameters = job.parameters
        records.append(
            RunRecord(
                job_id=job.id,
                drill=job.id in drill_jobs or "drill" in parameters,
                status=job.status,
                method=Method(
                    str(parameters.get("runner") or "mysql"),
                    str(parameters.get("backup_format") or (backup.format if backup else "unknown")),
                    backup.compression if backup else None,
                ),
                created_at=job.created_at,
                started_at=job.started_at,
                finished_at=job.finished_at,
                phase_times=job.phase_times or {},
                backup_bytes=backup.size_bytes if backup else job.bytes_total,
                verdict=job.backup_verdict,
                error=job.error,
            )
        )
    jobless = session.scalars(select(Drill).where(Drill.protected_database_id == protected.id, Drill.job_id.is_(None)))
    for drill in jobless:
        backup = by_id.get(drill.backup_id) if drill.backup_id is not None else None
        records.append(
            RunRecord(
                job_id=None,
                drill=True,
                status="failed",
                method=restoring_method(backup.format, backup.compression) if backup else Method("none", "none"),
                created_at=drill.created_at,
                started_at=None,
                finished_at=None,
                phase_times={},
                backup_bytes=None,
                error=drill.error,
            )
        )
    return records


def _last_drill(session: Session, protected: ProtectedDatabase) -> DrillPublic | None:
    row = session.execute(
        select(Drill, Job, Backup)
        .outerjoin(Job, Job.id == Drill.job_id)
        .outerjoin(Backup, Backup.id == Drill.backup_id)
        .where(Drill.protected_database_id == protected.id)
        .order_by(Drill.created_at.desc(), Drill.id.desc())
        .limit(1)
    ).first()
    return drill_public(row[0], protected.name, row[1], row[2]) if row is not None else None


def assess(session: Session, protected: ProtectedDatabase, now: datetime, backups: list[Backup]) -> Assessment:
    """Everything the trends page and the protected databases page show of one database; `backups` is every
    backup the store knows, from which the database's are picked."""
    own = backups_of(session, protected, backups)
    newest = latest(own)
    points = analyse(run_records(session, protected, own))
    estimate = None
    if newest is not None:
        estimate = estimate_restore(newest.size_bytes, restoring_method(newest.format, newest.compression), points)
    state = rto_state(protected.rto_s, estimate)
    schedule = schedule_of(protected)
    status = ProtectionStatus(
        backups=sum(1 for b in own if not b.missing),
        latest_backup=_backup_ref(newest) if newest is not None else None,
        estimate=_estimate_public(estimate) if estimate is not None else None,
        rto_state=state,
        schedule_text=describe(schedule) if schedule is not None else None,
        next_drill_at=next_slot(schedule, now) if schedule is not None else None,
        overdue_since=overdue_since(session, protected, now),
        last_drill=_last_drill(session, protected),
        active_drill_job_id=active_drill_job_id(session, protected.id),
    )
    return Assessment(protected, own, newest, points, estimate, state, status)


def assess_all(session: Session, now: datetime) -> list[Assessment]:
    backups = list(session.scalars(select(Backup)))
    protected = session.scalars(select(ProtectedDatabase).order_by(ProtectedDatabase.name))
    return [assess(session, p, now, backups) for p in protected]


def _backup_ref(backup: Backup) -> BackupRef:
    return BackupRef(
        id=backup.id,
        path=backup.path,
        format=backup.format,
        compression=backup.compression,
        size_bytes=backup.size_bytes,
        modified_at=backup.modified_at,
        missing=backup.missing,
    )


def _estimate_public(estimate: Estimate) -> EstimatePublic:
    return EstimatePublic(
        seconds=estimate.seconds,
        mb_per_s=estimate.bytes_per_s / MB,
        overhead_s=estimate.overhead_s,
        method=estimate.method.label,
        measured_method=estimate.measured_method.label,
        job_ids=estimate.job_ids,
    )


def strip_of(assessment: Assessment, now: datetime, days: int) -> list[Day]:
    """The status strip in the database's schedule time zone (UTC without a schedule)."""
    schedule = schedule_of(assessment.protected)
    zone = schedule.zone if schedule is not None else now.tzinfo
    assert zone is not None
    today: date = now.astimezone(zone).date()
    return status_strip(assessment.points, today=today, days=days, zone=zone)


def in_window(points: list[RunPoint], now: datetime, days: int) -> list[RunPoint]:
    start = now - timedelta(days=days)
    return [p for p in points if p.at >= start]


CSV_COLUMNS = (
    "protected_database",
    "database",
    "job_id",
    "drill",
    "method",
    "runner",
    "format",
    "compression",
    "status",
    "backup_verdict",
    "started_at",
    "finished_at",
    "duration_s",
    "restore_s",
    "backup_bytes",
    "mb_per_s",
    "baseline_mb_per_s",
    "regression",
    "error",
)


def _number(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _time(value: datetime | None) -> str:
    return "" if value is None else value.isoformat()


def runs_csv(assessments: list[Assessment], now: datetime, days: int) -> str:
    """One line per run in the window, oldest first per database, as the trends page shows them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for assessment in assessments:
        for point in in_window(assessment.points, now, days):
            run = point.run
            writer.writerow(
                [
                    assessment.protected.name,
                    assessment.protected.database,
                    run.job_id or "",
                    "yes" if run.drill else "no",
                    run.method.label,
                    run.method.runner,
                    run.method.format,
                    run.method.compression or "",
                    run.status,
                    run.verdict or "",
                    _time(run.started_at),
                    _time(point.at if run.finished_at is None and run.job_id is None else run.finished_at),
                    _number(point.duration_s),
                    _number(point.restore_s),
                    run.backup_bytes or "",
                    _number(point.bytes_per_s / MB if point.bytes_per_s else None),
                    _number(point.baseline_bytes_per_s / MB if point.baseline_bytes_per_s else None),
                    "yes" if point.regression else "no",
                    (run.error or "").replace("\n", " "),
                ]
            )
    return out.getvalue()
