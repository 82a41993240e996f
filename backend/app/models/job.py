import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class JobStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)


class JobPhase(enum.StrEnum):
    QUEUED = "queued"
    WAITING_FOR_TARGET = "waiting_for_target"
    PREPARING = "preparing"  # a physical backup: its redo log applied on a copy
    STARTING_SERVER = "starting_server"
    CONNECTING = "connecting"
    RESTORING = "restoring"
    BACKING_UP = "backing_up"
    VERIFYING = "verifying"
    CLEANING_UP = "cleaning_up"
    DONE = "done"


class BackupVerdict(enum.StrEnum):
    """What a finished restore showed of its backup. A failure that is not the backup's (the target could not be
    reached, the sandbox did not start, a cancel) gives no verdict."""

    RESTORES = "restores"  # restored, and verified
    DOES_NOT_RESTORE = "does_not_restore"  # unreadable, rejected by a fresh server, or verification failed


class JobKind(enum.StrEnum):
    RESTORE = "restore"
    IMPORT = "import"  # an uploaded trace log; nothing runs, the job only holds the trace
    BACKUP = "backup"  # a backup taken from a saved server into a backup root


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status_created", "status", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.QUEUED)
    phase: Mapped[str] = mapped_column(String(32), default=JobPhase.QUEUED)
    # What the user asked for, validated by the API: backup path, target, server options, database.
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    backup_id: Mapped[int | None] = mapped_column(ForeignKey("backups.id", ondelete="SET NULL"), index=True)
    target_id: Mapped[int | None] = mapped_column(ForeignKey("targets.id", ondelete="SET NULL"), index=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"), index=True)
    started_by: Mapped[str | None] = mapped_column(String(128))

    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cancel_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # {phase: [started_at_iso, finished_at_iso | None]} so the run page and bench can time each phase.
    phase_times: Mapped[dict[str, list[str | None]]] = mapped_column(JSON, default=dict)

    bytes_total: Mapped[int | None] = mapped_column(BigInteger)
    bytes_done: Mapped[int] = mapped_column(BigInteger, default=0)
    rows_done: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    worker: Mapped[str | None] = mapped_column(String(255))
    server_flavour: Mapped[str | None] = mapped_column(String(16))
    server_version: Mapped[str | None] = mapped_column(String(64))
    sandbox_dir: Mapped[str | None] = mapped_column(Text)
    sandbox_port: Mapped[int | None]
    sandbox_kept: Mapped[bool] = mapped_column(default=False)
    error: Mapped[str | None] = mapped_column(Text)
    backup_verdict: Mapped[str | None] = mapped_column(String(24))
    # What the worker learnt while running the job, for the advisor and the run page: the host (cores, memory,
    # disk), the threads and chunk size it used, the loader's phases, the prepare's recovery batches.
    run_facts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    parent: Mapped["Job | None"] = relationship(remote_side=[id])
