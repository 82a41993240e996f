from datetime import datetime

from sqlalchemy import JSON, ForeignKey, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class ProtectedDatabase(Base):
    """A database whose backups must restore within a target time, proved by scheduled drills.

    Its backups are the backups (rows of `backups`) that hold `database`: named in the backup's own details (a
    mysqldump, mydumper or MySQL Shell dump lists its databases, a mariabackup directory has one directory per
    database), narrowed to the paths matching `backup_glob` and to the backups that backup jobs took from
    `source_target_id`, when those are set (a --tab directory names no database: the glob or the source says
    which ones are this database's).
    """

    __tablename__ = "protected_databases"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    database: Mapped[str] = mapped_column(String(64))
    source_target_id: Mapped[int | None] = mapped_column(ForeignKey("targets.id", ondelete="SET NULL"), index=True)
    # fnmatch pattern of backup paths relative to their backup root, e.g. "nightly/shop-*".
    backup_glob: Mapped[str | None] = mapped_column(Text)
    rto_s: Mapped[int]

    # Five-field cron expression read in drill_timezone; None: no scheduled drills.
    drill_schedule: Mapped[str | None] = mapped_column(String(128))
    drill_timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    # A scheduled drill that has not started this long after its slot is overdue.
    drill_grace_s: Mapped[int] = mapped_column(default=3600)
    drill_preset: Mapped[str] = mapped_column(String(64), default="server-defaults")
    # When the schedule was last set: slots before it were never due.
    schedule_since: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    webhook_url: Mapped[str | None] = mapped_column(Text)
    # AES-GCM like saved-server passwords: signs each webhook body (HMAC-SHA256); never leaves the backend.
    webhook_secret_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary)
    email_to: Mapped[list[str]] = mapped_column(JSON, default=list)

    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
