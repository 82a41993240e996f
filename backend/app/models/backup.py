from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class Backup(Base):
    """An artifact found under a backup root, as of the last scan."""

    __tablename__ = "backups"

    id: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(Text, unique=True)
    root: Mapped[str] = mapped_column(Text)
    format: Mapped[str] = mapped_column(String(32))
    compression: Mapped[str | None] = mapped_column(String(16))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Format-specific facts read from the artifact: databases named in a dump, server version...
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    discovered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    missing: Mapped[bool] = mapped_column(default=False)
