from fastapi import APIRouter, status
from sqlalchemy import select

from app.api.deps import OperatorUser, SessionDep, SettingsDep
from app.core.queue import enqueue_job
from app.drills import service as drills
from app.models import Backup, Job, ProtectedDatabase
from app.models.base import utcnow
from app.notifications.delivery import redact_url
from app.protected import service
from app.protected.schemas import (
    DrillPublic,
    ProtectedDatabaseCreate,
    ProtectedDatabasePublic,
    ProtectedDatabasesPublic,
    ProtectedDatabaseUpdate,
)
from app.trends.service import Assessment, assess

router = APIRouter(prefix="/protected-databases", tags=["protected-databases"])


def _public(assessment: Assessment) -> ProtectedDatabasePublic:
    protected = assessment.protected
    return ProtectedDatabasePublic(
        id=protected.id,
        name=protected.name,
        database=protected.database,
        source_target_id=protected.source_target_id,
        backup_glob=protected.backup_glob,
        rto_s=protected.rto_s,
        drill_schedule=protected.drill_schedule,
        drill_timezone=protected.drill_timezone,
        drill_grace_s=protected.drill_grace_s,
        drill_preset=protected.drill_preset,
        webhook=redact_url(protected.webhook_url) if protected.webhook_url else None,
        has_webhook_secret=protected.webhook_secret_encrypted is not None,
        email_to=list(protected.email_to or []),
        created_at=protected.created_at,
        updated_at=protected.updated_at,
        status=assessment.status,
    )


def _assessed(session: SessionDep, protected: ProtectedDatabase) -> ProtectedDatabasePublic:
    return _public(assess(session, protected, utcnow(), list(session.scalars(select(Backup)))))


@router.get("", operation_id="protected-databases-read_protected_databases")
def read_protected_databases(session: SessionDep, settings: SettingsDep) -> ProtectedDatabasesPublic:
    """Protected databases with their latest backup, estimated restore time against the RTO, and drills' state."""
    backups = list(session.scalars(select(Backup)))
    now = utcnow()
    return ProtectedDatabasesPublic(
        data=[_public(assess(session, p, now, backups)) for p in service.list_protected(session)],
        smtp_configured=bool(settings.smtp_host),
    )


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="protected-databases-create_protected_database")
def create_protected_database(
    session: SessionDep, user: OperatorUser, data: ProtectedDatabaseCreate
) -> ProtectedDatabasePublic:
    """Protect a database: its RTO, drill schedule and who hears about failures (operator)."""
    return _assessed(session, service.create_protected(session, data, user))


@router.get("/{protected_id}", operation_id="protected-databases-read_protected_database")
def read_protected_database(session: SessionDep, protected_id: int) -> ProtectedDatabasePublic:
    """One protected database with its state."""
    return _assessed(session, service.get_protected(session, protected_id))


@router.patch("/{protected_id}", operation_id="protected-databases-update_protected_database")
def update_protected_database(
    session: SessionDep, user: OperatorUser, protected_id: int, data: ProtectedDatabaseUpdate
) -> ProtectedDatabasePublic:
    """Change the fields sent; a new schedule or time zone counts from now (no slot before it is overdue)
    (operator)."""
    return _assessed(session, service.update_protected(session, protected_id, data, user))


@router.delete(
    "/{protected_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="protected-databases-delete_protected_database",
)
def delete_protected_database(session: SessionDep, user: OperatorUser, protected_id: int) -> None:
    """Stop protecting a database: its drill records and notifications go; the drills' jobs stay in the history
    (operator)."""
    service.delete_protected(session, protected_id, user)


@router.post(
    "/{protected_id}/drills",
    status_code=status.HTTP_201_CREATED,
    operation_id="protected-databases-start_drill",
)
def start_drill(session: SessionDep, settings: SettingsDep, user: OperatorUser, protected_id: int) -> DrillPublic:
    """Run a drill now: restore and verify the latest backup in a sandbox (409 while one is queued or running)
    (operator)."""
    protected = service.get_protected(session, protected_id)
    drill = drills.start_drill(session, protected, settings, trigger="manual", actor=user)
    session.commit()
    job = session.get(Job, drill.job_id) if drill.job_id is not None else None
    if job is not None:
        enqueue_job(job.kind, job.id)
    backup = session.get(Backup, drill.backup_id) if drill.backup_id is not None else None
    return drills.drill_public(drill, protected.name, job, backup)
