import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class DeliveryStatus(enum.StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    RETRYING = "retrying"  # an attempt failed; tried again at next_attempt_at
    SENT = "sent"
    FAILED = "failed"  # every attempt failed


class Notification(Base):
    """One event told through one channel. The (event_key, channel) pair is unique: an event is sent once."""

    __tablename__ = "notifications"
    __table_args__ = (
        UniqueConstraint("event_key", "channel"),
        Index("ix_notifications_status_next_attempt", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    protected_database_id: Mapped[int | None] = mapped_column(
        ForeignKey("protected_databases.id", ondelete="CASCADE"), index=True
    )
    event: Mapped[str] = mapped_column(String(32))  # job_failed, drill_failed, drill_overdue, rto_breach, test
    event_key: Mapped[str] = mapped_column(String(255))
    channel: Mapped[str] = mapped_column(String(16))  # "webhook" or "email"
    destination: Mapped[str] = mapped_column(Text)  # the URL, or the addresses
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=DeliveryStatus.PENDING)
    attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
