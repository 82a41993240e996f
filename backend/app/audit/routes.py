from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import AdminUser, SessionDep
from app.audit import service
from app.audit.schemas import AuditEventPublic, AuditEventsPublic
from app.models import AuditAction

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", operation_id="audit-read_events")
def read_events(
    session: SessionDep,
    _admin: AdminUser,
    action: Annotated[list[str] | None, Query(description="Only these actions, e.g. job.cancel")] = None,
    username: str | None = None,
    object_type: str | None = None,
    object_id: str | None = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> AuditEventsPublic:
    """Who logged in (or failed to), launched, cancelled, retried, imported, or changed a saved server or a user,
    and when; newest first (admin only)."""
    events, count = service.list_events(
        session,
        actions=action,
        username=username,
        object_type=object_type,
        object_id=object_id,
        offset=offset,
        limit=limit,
    )
    return AuditEventsPublic(
        data=[AuditEventPublic.model_validate(e) for e in events], count=count, actions=[a.value for a in AuditAction]
    )
