from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class ServerSnapshot(Base):
    """SHOW GLOBAL VARIABLES and SHOW GLOBAL STATUS of the job's server at the start and end of the job."""

    __tablename__ = "server_snapshots"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    moment: Mapped[str] = mapped_column(String(8))  # "start" or "end"
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    variables: Mapped[dict[str, str]] = mapped_column(JSON)
    status: Mapped[dict[str, str]] = mapped_column(JSON)
