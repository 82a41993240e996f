"""Saved servers: create, edit, delete (each on record in the audit log) and check. Services flush; the caller's
unit of work commits."""

import hmac
from dataclasses import dataclass, field
from typing import Any

import redis
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.audit.service import record
from app.core.config import Settings
from app.core.errors import Conflict, NotFound
from app.core.liveness import alive_workers, worker_host
from app.core.security import decrypt_secret, encrypt_secret
from app.models import ACTIVE_STATUSES, AuditAction, Job, Target, User
from app.models.base import utcnow
from app.targets.connection import Credentials, TargetUnreachable, connect
from app.targets.locality import worker_host_verdict
from app.targets.schemas import ServerFlavour, TargetCheck, TargetCreate, TargetUpdate

# Changing any of these changes which server, as whom or into which database a check connects: the last check no
# longer says anything about the server as saved.
_CONNECTION_FIELDS = ("host", "port", "socket", "user", "default_database")
_FIELD_WORDS = {"default_database": "default database"}


def _where(target: Target) -> str:
    return target.socket or f"{target.host}:{target.port}"


def _require_free_name(session: Session, name: str, own_id: int | None = None) -> None:
    existing = session.scalar(select(Target).where(Target.name == name))
    if existing is not None and existing.id != own_id:
        raise Conflict(f"a target named '{name}' already exists; choose another name", field="name")


def create_target(session: Session, data: TargetCreate, actor: User) -> Target:
    _require_free_name(session, data.name)
    target = Target(**data.model_dump(exclude={"password"}))
    if data.password is not None:
        target.password_encrypted = encrypt_secret(data.password)
    session.add(target)
    session.flush()
    record(
        session,
        AuditAction.TARGET_CREATE,
        actor,
        object_type="target",
        object_id=target.id,
        detail=f"{target.name}: {target.user}@{_where(target)}" + (", with a password" if data.password else ""),
    )
    return target


def list_targets(session: Session) -> list[Target]:
    return list(session.scalars(select(Target).order_by(Target.name)))


def get_target(session: Session, target_id: int) -> Target:
    target = session.get(Target, target_id)
    if target is None:
        raise NotFound(f"no saved target with id {target_id}", field="target_id")
    return target


def _shown(value: object) -> str:
    return "none" if value is None else str(value)


def _password_change(target: Target, password: str | None) -> str | None:
    """What setting this password does, in words that never hold it; None when it is the stored one already."""
    stored = decrypt_secret(target.password_encrypted) if target.password_encrypted is not None else None
    if password is None:
        return None if stored is None else "password removed"
    if stored is not None and hmac.compare_digest(stored.encode(), password.encode()):
        return None
    return "password replaced" if stored is not None else "password set"


def update_target(session: Session, target_id: int, data: TargetUpdate, actor: User) -> Target:
    """Applies the fields sent; the audit event names each change, and says of the password and the notes only
    that they changed."""
    target = get_target(session, target_id)
    sent = data.model_dump(exclude_unset=True)
    changes: list[str] = []
    if "name" in sent and sent["name"] != target.name:
        _require_free_name(session, sent["name"], target.id)
        changes.append(f"name '{target.name}' -> '{sent['name']}'")
        target.name = sent["name"]
    connection_changed = False
    for name in _CONNECTION_FIELDS:
        if name in sent and sent[name] != getattr(target, name):
            changes.append(f"{_FIELD_WORDS.get(name, name)} {_shown(getattr(target, name))} -> {_shown(sent[name])}")
            setattr(target, name, sent[name])
            connection_changed = True
    if "password" in sent:
        password_change = _password_change(target, sent["password"])
        if password_change is not None:
            changes.append(password_change)
            target.password_encrypted = None if sent["password"] is None else encrypt_secret(sent["password"])
            connection_changed = True
    if "notes" in sent and sent["notes"] != target.notes:
        changes.append("notes removed" if sent["notes"] is None else "notes changed")
        target.notes = sent["notes"]
    if not changes:
        return target
    if connection_changed:
        target.last_check = None
    target.updated_at = utcnow()
    record(
        session,
        AuditAction.TARGET_UPDATE,
        actor,
        object_type="target",
        object_id=target.id,
        detail=f"{target.name}: {', '.join(changes)}",
    )
    session.flush()
    return target


@dataclass
class TargetUsage:
    job_count: int = 0
    # job id -> how it uses the server, for the message that refuses a delete.
    active: dict[int, str] = field(default_factory=dict)


def _uses(job: Job) -> list[tuple[int, str]]:
    uses = []
    if job.target_id is not None:
        uses.append((job.target_id, "backs it up" if job.kind == "backup" else "restores into it"))
    checksum_source = job.parameters.get("checksum_source_id")
    if isinstance(checksum_source, int):
        uses.append((checksum_source, "compares checksums with it"))
    return uses


def usage(session: Session) -> dict[int, TargetUsage]:
    """Per saved server: how many jobs used it, and the queued and running ones that use it now."""
    found: dict[int, TargetUsage] = {}
    counts = select(Job.target_id, func.count()).where(Job.target_id.is_not(None)).group_by(Job.target_id)
    for target_id, count in session.execute(counts):
        if target_id is not None:
            found.setdefault(target_id, TargetUsage()).job_count = count
    # Active jobs are few; a checksum source is named in the job's parameters only, so they are read whole.
    active = select(Job).where(Job.status.in_(ACTIVE_STATUSES)).order_by(Job.id)
    for job in session.scalars(active):
        for target_id, how in _uses(job):
            found.setdefault(target_id, TargetUsage()).active.setdefault(job.id, f"{job.status} job {job.id} {how}")
    return found


def delete_target(session: Session, target_id: int, actor: User) -> None:
    """Refused while a queued or running job uses the server; finished jobs keep their record (their logs, results
    and the server's name as it was when they ran) and lose only the link."""
    target = get_target(session, target_id)
    used = usage(session).get(target.id, TargetUsage())
    if used.active:
        raise Conflict(
            f"'{target.name}' is in use: {'; '.join(used.active.values())}. Cancel those jobs or wait until they "
            "end, then delete it"
        )
    kept = f"; {used.job_count} finished job(s) keep their record" if used.job_count else ""
    record(
        session,
        AuditAction.TARGET_DELETE,
        actor,
        object_type="target",
        object_id=target.id,
        detail=f"{target.name}: {target.user}@{_where(target)}{kept}",
    )
    session.delete(target)
    session.flush()


def server_flavour(version: str, version_comment: str) -> ServerFlavour:
    return "mariadb" if "mariadb" in f"{version} {version_comment}".lower() else "mysql"


def _worker_hosts(settings: Settings) -> list[str] | None:
    """The hosts of the live workers; None when Redis does not answer."""
    try:
        with redis.Redis.from_url(settings.redis_url, socket_timeout=2) as client:
            return sorted({worker_host(name) for name in alive_workers(client)})
    except redis.RedisError:
        return None


def _server_facts(connection: Any) -> tuple[str, str, str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION(), @@version_comment, @@hostname, @@pid_file")
        row = cursor.fetchone() or ()
    version, comment, hostname, pid_file = (str(value) if value is not None else "" for value in row)
    return version, comment, hostname, pid_file


def check_target(target: Target, settings: Settings) -> TargetCheck:
    """Log in as saved (into the default database, if any) and report the server's version, flavour and host, or
    why the login failed; kept on the target as its last check."""
    now = utcnow()
    try:
        connection = connect(Credentials.of(target), database=target.default_database)
    except TargetUnreachable as error:
        result = TargetCheck(ok=False, checked_at=now, message=str(error), problem=error.problem)
    else:
        with connection:
            version, comment, hostname, pid_file = _server_facts(connection)
        on_worker_host, note = worker_host_verdict(hostname, pid_file, _worker_hosts(settings))
        into = f", database '{target.default_database}'" if target.default_database else ""
        result = TargetCheck(
            ok=True,
            checked_at=now,
            message=f"connected to {version} ({comment}) as '{target.user}'{into}",
            server_version=version,
            server_flavour=server_flavour(version, comment),
            server_hostname=hostname,
            on_worker_host=on_worker_host,
            worker_host_note=note,
        )
    target.last_check = result.model_dump(mode="json")
    return result
