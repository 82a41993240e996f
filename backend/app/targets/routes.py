from fastapi import APIRouter, status
from sqlalchemy.orm import Session

from app.api.deps import AdminUser, OperatorUser, SessionDep, SettingsDep
from app.models import Target
from app.targets import service
from app.targets.schemas import TargetCheck, TargetCreate, TargetPublic, TargetsPublic, TargetUpdate

router = APIRouter(prefix="/targets", tags=["targets"])


def _public(target: Target, used: service.TargetUsage) -> TargetPublic:
    return TargetPublic(
        id=target.id,
        name=target.name,
        host=target.host,
        port=target.port,
        socket=target.socket,
        user=target.user,
        default_database=target.default_database,
        notes=target.notes,
        has_password=target.password_encrypted is not None,
        created_at=target.created_at,
        updated_at=target.updated_at,
        last_check=TargetCheck.model_validate(target.last_check) if target.last_check else None,
        job_count=used.job_count,
        active_job_ids=sorted(used.active),
    )


def _one(session: Session, target: Target) -> TargetPublic:
    return _public(target, service.usage(session).get(target.id, service.TargetUsage()))


@router.get("", operation_id="targets-read_targets")
def read_targets(session: SessionDep) -> TargetsPublic:
    """Saved servers that restores write into and backups read from, with their last check (passwords are never
    returned, only has_password)."""
    used = service.usage(session)
    return TargetsPublic(
        data=[_public(t, used.get(t.id, service.TargetUsage())) for t in service.list_targets(session)]
    )


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="targets-create_target")
def create_target(session: SessionDep, admin: AdminUser, data: TargetCreate) -> TargetPublic:
    """Save a server; its password is encrypted at rest (admin)."""
    return _one(session, service.create_target(session, data, admin))


@router.patch("/{target_id}", operation_id="targets-update_target")
def update_target(session: SessionDep, admin: AdminUser, target_id: int, data: TargetUpdate) -> TargetPublic:
    """Change a saved server: only the fields sent change; a password sent replaces the stored one, and one left
    out is kept (admin). A change of how to connect clears the last check."""
    return _one(session, service.update_target(session, target_id, data, admin))


@router.post("/{target_id}/check", operation_id="targets-check_target")
def check_target(session: SessionDep, settings: SettingsDep, _operator: OperatorUser, target_id: int) -> TargetCheck:
    """Log in to the saved server and report its version, flavour and whether it runs on a worker's host, or why
    the login failed (wrong password, unreachable, TLS only...) (operator)."""
    return service.check_target(service.get_target(session, target_id), settings)


@router.delete("/{target_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="targets-delete_target")
def delete_target(session: SessionDep, admin: AdminUser, target_id: int) -> None:
    """Forget a saved server (admin); refused while queued or running jobs use it, and finished jobs keep their
    record."""
    service.delete_target(session, target_id, admin)
