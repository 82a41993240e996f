from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from app.api.deps import OperatorUser, SessionDep, SettingsDep
from app.audit.service import record
from app.core.db import session_scope
from app.core.errors import InvalidRequest
from app.models import AuditAction, DeliveryStatus, Notification
from app.models.base import utcnow
from app.notifications import service
from app.notifications.schemas import DeliveryState, NotificationPublic, NotificationsPublic
from app.protected.service import get_protected

router = APIRouter(tags=["notifications"])


def _public(notification: Notification) -> NotificationPublic:
    waiting = notification.status in (DeliveryStatus.PENDING, DeliveryStatus.RETRYING)
    return NotificationPublic(
        id=notification.id,
        protected_database_id=notification.protected_database_id,
        event=notification.event,
        event_key=notification.event_key,
        summary=str(notification.payload.get("summary", "")),
        channel="email" if notification.channel == "email" else "webhook",
        destination=notification.destination,
        status=notification.status,
        attempts=notification.attempts,
        last_error=notification.last_error,
        created_at=notification.created_at,
        next_attempt_at=notification.next_attempt_at if waiting else None,
        sent_at=notification.sent_at,
    )


@router.get("/notifications", operation_id="notifications-read_notifications")
def read_notifications(
    session: SessionDep,
    protected_database_id: int | None = None,
    status: DeliveryState | None = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> NotificationsPublic:
    """Notifications recorded, newest first: what was told to whom, and whether it got through."""
    rows, count = service.list_notifications(session, protected_database_id, status, offset, limit)
    return NotificationsPublic(data=[_public(n) for n in rows], count=count)


@router.post(
    "/protected-databases/{protected_id}/notifications/test",
    operation_id="notifications-send_test_notification",
)
async def send_test_notification(
    session: SessionDep, settings: SettingsDep, user: OperatorUser, protected_id: int
) -> NotificationsPublic:
    """Send a test notification through every channel of the database now, and say how each went (operator)."""
    protected = get_protected(session, protected_id)
    if not protected.webhook_url and not protected.email_to:
        raise InvalidRequest(
            f"{protected.name} has no webhook and no e-mail address: set one, then test it", field="webhook_url"
        )
    record(
        session,
        AuditAction.NOTIFICATION_TEST,
        user,
        object_type="protected_database",
        object_id=protected.id,
        detail=f"test notification of {protected.name}",
    )
    session.commit()
    session.close()
    sent = await run_in_threadpool(service.send_test, session_scope, protected_id, settings, utcnow())
    return NotificationsPublic(data=[_public(n) for n in sent], count=len(sent))
