import enum
from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class Role(enum.StrEnum):
    """What a user may do; each role may do everything the ones below it may."""

    VIEWER = "viewer"  # read everything but the users and the audit log
    OPERATOR = "operator"  # also launch, cancel and retry jobs, import traces, check saved servers
    ADMIN = "admin"  # also manage users and saved servers, and read the audit log

    @property
    def rank(self) -> int:
        return list(Role).index(self)

    def allows(self, needed: "Role") -> bool:
        return self.rank >= needed.rank


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    # argon2id in PHC string form ($argon2id$v=19$m=...,t=...,p=...$salt$hash); never the password.
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), default=Role.VIEWER)
    disabled: Mapped[bool] = mapped_column(default=False)
    # Set for a one-time password (the first admin's, or one an admin set): nothing but changing it is allowed.
    must_change_password: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    password_changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_login_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
