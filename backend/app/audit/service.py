"""The audit log: every change is recorded in the caller's unit of work, so it is on record exactly when the
change itself is committed."""

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import AuditAction, AuditEvent, User
from app.models.base import utcnow


def record(
    session: Session,
    action: AuditAction,
    user: User | None,
    *,
    object_type: str | None = None,
    object_id: int | str | None = None,
    detail: str | None = None,
    client: str | None = None,
    username: str | None = None,
) -> AuditEvent:
    """`username` names who tried when there is no user (a failed login for a name that does not exist)."""
    event = AuditEvent(
        created_at=utcnow(),
        user_id=user.id if user is not None else None,
        username=user.username if user is not None else username,
        action=action,
        object_type=object_type,
        object_id=None if object_id is None else str(object_id),
        detail=detail,
        client=client,
    )
    session.add(event)
    return event


def count_since(session: Session, action: AuditAction, since: datetime, *, username: str, client: str | None) -> int:
    query = select(func.count()).where(
        AuditEvent.action == action,
        AuditEvent.created_at >= since,
        AuditEvent.username == username,
        AuditEvent.client.is_(None) if client is None else AuditEvent.client == client,
    )
    return session.scalar(query) or 0


def list_events(
    session: Session,
    *,
    actions: list[str] | None = None,
    username: str | None = None,
    object_type: str | None = None,
    object_id: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> tuple[list[AuditEvent], int]:
    query = select(AuditEvent)
    if actions:
        query = query.where(AuditEvent.action.in_(actions))
    if username:
        query = query.where(AuditEvent.username == username)
    if object_type:
        query = query.where(AuditEvent.object_type == object_type)
    if object_id:
        query = query.where(AuditEvent.object_id == object_id)
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(query.order_by(AuditEvent.id.desc()).offset(offset).limit(limit))
    return list(page), count
