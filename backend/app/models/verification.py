from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class VerificationResult(Base):
    """One table of a restored backup checked against what the backup says it holds."""

    __tablename__ = "verification_results"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    database: Mapped[str] = mapped_column(String(128))
    table: Mapped[str] = mapped_column(String(128))
    check: Mapped[str] = mapped_column(String(32), default="row_count")
    expected: Mapped[int | None] = mapped_column(BigInteger)
    actual: Mapped[int | None] = mapped_column(BigInteger)
    ok: Mapped[bool]
    detail: Mapped[str | None] = mapped_column(Text)
    checked_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
