from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

DeliveryState = Literal["pending", "sending", "retrying", "sent", "failed"]


class NotificationPublic(BaseModel):
    id: int
    protected_database_id: int | None
    event: str = Field(description="job_failed, drill_failed, drill_overdue, rto_breach or test")
    event_key: str
    summary: str
    channel: Literal["webhook", "email"]
    destination: str = Field(description="The addresses, or the webhook's host (its path is hidden)")
    status: DeliveryState
    attempts: int
    last_error: str | None = Field(description="Why the last attempt failed (or which recipients were refused)")
    created_at: datetime
    next_attempt_at: datetime | None = Field(description="When it is tried again, while it is pending or retrying")
    sent_at: datetime | None


class NotificationsPublic(BaseModel):
    data: list[NotificationPublic]
    count: int
