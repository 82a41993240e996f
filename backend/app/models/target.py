from datetime import datetime
from typing import Any

from sqlalchemy import JSON, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class Target(Base):
    """A saved, existing server that restores may write into, backups read from and checksums compare with."""

    __tablename__ = "targets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    host: Mapped[str] = mapped_column(String(255), default="127.0.0.1")
    port: Mapped[int] = mapped_column(default=3306)
    socket: Mapped[str | None] = mapped_column(Text)
    user: Mapped[str] = mapped_column(String(128))
    # AES-GCM: 12-byte random nonce followed by the ciphertext; never leaves the backend in clear.
    password_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary)
    # The database a connection check opens, and the backup form's suggestion.
    default_database: Mapped[str | None] = mapped_column(String(64))
    notes: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The latest connection check as app.targets.schemas.TargetCheck dumps it; cleared when an edit changes how we
    # connect, since it no longer says anything about the server as saved.
    last_check: Mapped[dict[str, Any] | None] = mapped_column(JSON)
