import enum
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class AuditAction(enum.StrEnum):
    LOGIN = "auth.login"
    LOGIN_FAILED = "auth.login_failed"
    LOGOUT = "auth.logout"
    PASSWORD_CHANGED = "auth.password_changed"  # noqa: S105 (an action name)
    JOB_RESTORE = "job.restore"
    JOB_BACKUP = "job.backup"
    JOB_CANCEL = "job.cancel"
    JOB_RETRY = "job.retry"
    TRACE_IMPORT = "trace.import"
    TARGET_CREATE = "target.create"
    TARGET_UPDATE = "target.update"
    TARGET_DELETE = "target.delete"
    USER_CREATE = "user.create"
    USER_UPDATE = "user.update"
    USER_PASSWORD_RESET = "user.password_reset"  # noqa: S105 (an action name)
    USER_DELETE = "user.delete"
    FIRST_ADMIN = "user.first_admin"
    PROTECTED_CREATE = "protected_database.create"
    PROTECTED_UPDATE = "protected_database.update"
    PROTECTED_DELETE = "protected_database.delete"
    DRILL_START = "drill.start"
    NOTIFICATION_TEST = "notification.test"


class AuditEvent(Base):
    """Who did what to which object, and when: written in the same unit of work as the change itself."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_created_at", "created_at"),
        Index("ix_audit_events_action_created_at", "action", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The name as it was then (kept when the user is deleted), or the name tried in a failed login.
    username: Mapped[str | None] = mapped_column(String(64))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    action: Mapped[str] = mapped_column(String(48))
    object_type: Mapped[str | None] = mapped_column(String(32))
    object_id: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[str | None] = mapped_column(Text)
    # The client's address, for logins and failed logins.
    client: Mapped[str | None] = mapped_column(String(64))
