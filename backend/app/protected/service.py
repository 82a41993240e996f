"""Protected databases: saving them, and finding their backups. Services flush; the caller's unit of work commits."""

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.audit.service import record
from app.core.errors import Conflict, InvalidRequest, NotFound
from app.core.security import encrypt_secret
from app.drills.schedule import ScheduleError, parse_schedule, parse_zone
from app.models import AuditAction, Backup, Job, JobKind, JobStatus, ProtectedDatabase, Target, User
from app.models.base import utcnow
from app.protected.schemas import ProtectedDatabaseCreate, ProtectedDatabaseFields
from app.protected.selection import Selection, belongs
from app.sandboxes.options import PRESETS


def list_protected(session: Session) -> list[ProtectedDatabase]:
    return list(session.scalars(select(ProtectedDatabase).order_by(ProtectedDatabase.name)))


def get_protected(session: Session, protected_id: int) -> ProtectedDatabase:
    protected = session.get(ProtectedDatabase, protected_id)
    if protected is None:
        raise NotFound(f"no protected database with id {protected_id}", field="protected_database_id")
    return protected


def create_protected(session: Session, data: ProtectedDatabaseCreate, actor: User) -> ProtectedDatabase:
    protected = ProtectedDatabase(email_to=[], schedule_since=utcnow())
    changes = data.model_dump(exclude_unset=False)
    _apply(session, protected, dict(changes))
    session.add(protected)
    session.flush()
    record(
        session,
        AuditAction.PROTECTED_CREATE,
        actor,
        object_type="protected_database",
        object_id=protected.id,
        detail=_described(protected, changes),
    )
    return protected


def update_protected(
    session: Session, protected_id: int, data: ProtectedDatabaseFields, actor: User
) -> ProtectedDatabase:
    protected = get_protected(session, protected_id)
    changes = data.model_dump(exclude_unset=True)
    for required in ("name", "database", "rto_s", "drill_timezone", "drill_grace_s", "drill_preset"):
        if required in changes and changes[required] is None:
            raise InvalidRequest(f"{required} cannot be emptied", field=required)
    before = {name: getattr(protected, name, None) for name in changes}
    _apply(session, protected, dict(changes))
    protected.updated_at = utcnow()
    session.flush()
    changed = {
        name: value
        for name, value in changes.items()
        if name == "webhook_secret" or getattr(protected, name, None) != before[name]
    }
    if changed:
        record(
            session,
            AuditAction.PROTECTED_UPDATE,
            actor,
            object_type="protected_database",
            object_id=protected.id,
            detail=_described(protected, changed, before),
        )
    return protected


def delete_protected(session: Session, protected_id: int, actor: User) -> None:
    """Forget a protected database, its drill records and notifications (the drills' jobs stay in the history)."""
    protected = get_protected(session, protected_id)
    record(
        session,
        AuditAction.PROTECTED_DELETE,
        actor,
        object_type="protected_database",
        object_id=protected.id,
        detail=f"{protected.name} (database {protected.database})",
    )
    session.delete(protected)
    session.flush()


# Values the audit log never holds: a secret, and the webhook's address (chat services put a token in it).
_HIDDEN_IN_AUDIT = {"webhook_secret", "webhook_url"}


def _described(protected: ProtectedDatabase, changes: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    parts = []
    for name, value in changes.items():
        if name in _HIDDEN_IN_AUDIT:
            parts.append(f"{name} {'removed' if value is None else 'set'}")
        elif before is not None:
            parts.append(f"{name} {before.get(name)!r} -> {getattr(protected, name, value)!r}")
        elif value is not None:
            parts.append(f"{name} {getattr(protected, name, value)!r}")
    return f"{protected.name}: " + "; ".join(parts)


def _apply(session: Session, protected: ProtectedDatabase, changes: dict[str, Any]) -> None:
    if "name" in changes and changes["name"] != protected.name:
        clash = session.scalar(select(ProtectedDatabase).where(ProtectedDatabase.name == changes["name"]))
        if clash is not None:
            raise Conflict(f"a protected database named '{changes['name']}' already exists", field="name")
    if changes.get("source_target_id") is not None and session.get(Target, changes["source_target_id"]) is None:
        raise InvalidRequest(f"no saved target with id {changes['source_target_id']}", field="source_target_id")
    if "drill_preset" in changes and changes["drill_preset"] not in PRESETS:
        known = ", ".join(PRESETS)
        raise InvalidRequest(f"unknown preset '{changes['drill_preset']}'; choose one of: {known}", "drill_preset")
    schedule = changes.get("drill_schedule", protected.drill_schedule)
    timezone = changes.get("drill_timezone") or protected.drill_timezone or "UTC"
    try:
        parse_zone(timezone)
        if schedule is not None:
            changes["drill_schedule"] = parse_schedule(schedule, timezone).cron
    except ScheduleError as error:
        raise InvalidRequest(str(error), field=error.field) from None
    if ("drill_schedule" in changes and changes["drill_schedule"] != protected.drill_schedule) or (
        "drill_timezone" in changes and changes["drill_timezone"] != protected.drill_timezone
    ):
        # Slots of a schedule that was not in force were never due: nothing is overdue for them.
        protected.schedule_since = utcnow()
    if "webhook_secret" in changes:
        secret = changes.pop("webhook_secret")
        protected.webhook_secret_encrypted = encrypt_secret(secret) if secret is not None else None
    if "email_to" in changes:
        changes["email_to"] = list(dict.fromkeys(changes["email_to"] or []))
    for name, value in changes.items():
        setattr(protected, name, value)


def selection_of(session: Session, protected: ProtectedDatabase) -> Selection:
    source_paths: set[str] | None = None
    if protected.source_target_id is not None:
        jobs = session.scalars(
            select(Job).where(
                Job.kind == JobKind.BACKUP,
                Job.status == JobStatus.SUCCEEDED,
                Job.target_id == protected.source_target_id,
            )
        )
        source_paths = {
            str(job.parameters["backup_path"])
            for job in jobs
            if not job.parameters.get("databases") or protected.database in job.parameters["databases"]
        }
    return Selection(protected.database, protected.backup_glob, source_paths)


def backups_of(session: Session, protected: ProtectedDatabase, backups: list[Backup] | None = None) -> list[Backup]:
    """The database's backups among `backups` (default: every backup the store knows, gone from disk or not)."""
    selection = selection_of(session, protected)
    candidates = backups if backups is not None else list(session.scalars(select(Backup)))
    return [b for b in candidates if belongs(selection, path=b.path, root=b.root, details=b.details or {})]
