from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class AppliedSuggestion(Base):
    """A suggestion of the advisor that a user re-ran a job with, and what it measured.

    The suggestion is kept as it was shown (what was seen, the change, the expected effect), because the rules
    and the parent's analysis may change later; the speedup is filled in when the child job ends.
    """

    __tablename__ = "applied_suggestions"

    id: Mapped[int] = mapped_column(primary_key=True)
    parent_job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    child_job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), unique=True)
    rule: Mapped[str] = mapped_column(String(64), index=True)
    suggestion: Mapped[dict[str, Any]] = mapped_column(JSON)
    expected_speedup: Mapped[float | None] = mapped_column(Float)
    # Seconds of the phase the advice was about ("restoring", or "preparing" for a physical backup) in each run;
    # speedup = parent_seconds / child_seconds, so 1.5 means the child took two thirds of the parent's time.
    phase: Mapped[str] = mapped_column(String(32))
    parent_seconds: Mapped[float | None] = mapped_column(Float)
    child_seconds: Mapped[float | None] = mapped_column(Float)
    speedup: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    measured_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
