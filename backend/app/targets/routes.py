from fastapi import APIRouter, status

from app.api.deps import SessionDep
from app.models import Target
from app.targets import service
from app.targets.schemas import TargetCheck, TargetCreate, TargetPublic, TargetsPublic

router = APIRouter(prefix="/targets", tags=["targets"])


def _public(target: Target) -> TargetPublic:
    return TargetPublic(
        id=target.id,
        name=target.name,
        host=target.host,
        port=target.port,
        socket=target.socket,
        user=target.user,
        notes=target.notes,
        has_password=target.password_encrypted is not None,
        created_at=target.created_at,
    )


@router.get("", operation_id="targets-read_targets")
def read_targets(session: SessionDep) -> TargetsPublic:
    """Saved servers that restores can write into (passwords are never returned)."""
    return TargetsPublic(data=[_public(t) for t in service.list_targets(session)])


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="targets-create_target")
def create_target(session: SessionDep, data: TargetCreate) -> TargetPublic:
    """Save a server; its password is encrypted at rest."""
    return _public(service.create_target(session, data))


@router.post("/{target_id}/check", operation_id="targets-check_target")
def check_target(session: SessionDep, target_id: int) -> TargetCheck:
    """Try to log in to the saved server and report its version or why it failed."""
    return service.check_target(service.get_target(session, target_id))


@router.delete("/{target_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="targets-delete_target")
def delete_target(session: SessionDep, target_id: int) -> None:
    """Forget a saved server (jobs that used it keep their history)."""
    service.delete_target(session, target_id)
