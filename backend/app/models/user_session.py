from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime
from app.models.user import User


class UserSession(Base):
    """A login: the browser holds the token in a cookie (an API client sends it as a Bearer header); only its
    SHA-256 is kept, so a copy of the job store does not let anyone in."""

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The earlier of last use + idle timeout and creation + maximum age.
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    client: Mapped[str | None] = mapped_column(String(64))
    user_agent: Mapped[str | None] = mapped_column(String(255))

    user: Mapped[User] = relationship(lazy="joined")
