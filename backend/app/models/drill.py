from datetime import datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class Drill(Base):
    """One restore-and-verify of a protected database's latest backup, run on its schedule or by hand.

    The restore itself is a job (kind restore, into a sandbox); a drill that could not make one (no backup, or
    the latest backup is gone from disk) has no job and says why in `error`.
    """

    __tablename__ = "drills"
    # One drill per scheduled slot, however many times the scheduler looks at it.
    __table_args__ = (UniqueConstraint("protected_database_id", "scheduled_for"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    protected_database_id: Mapped[int] = mapped_column(
        ForeignKey("protected_databases.id", ondelete="CASCADE"), index=True
    )
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"), unique=True)
    trigger: Mapped[str] = mapped_column(String(16))  # "schedule" or "manual"
    scheduled_for: Mapped[datetime | None] = mapped_column(UTCDateTime)
    backup_id: Mapped[int | None] = mapped_column(ForeignKey("backups.id", ondelete="SET NULL"))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
