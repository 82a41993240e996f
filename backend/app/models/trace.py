import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow
from app.models.types import UTCDateTime


class TraceSource(enum.StrEnum):
    CAPTURE = "capture"  # recorded by the worker while the job ran
    IMPORT = "import"  # an uploaded JuiceFS access log or strace log


class TraceStatus(enum.StrEnum):
    RECORDING = "recording"
    COMPLETE = "complete"
    FAILED = "failed"


class Trace(Base):
    """The summary of a job's IO trace; the operations themselves live in files under data_dir/traces/<job_id>."""

    __tablename__ = "traces"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), unique=True)
    source: Mapped[str] = mapped_column(String(16))
    # How it was captured ("ebpf", "strace", "fuse") or the format of an import ("juicefs", "strace").
    backend: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default=TraceStatus.RECORDING)
    # What the capture could see: the server's AIO mode and how much of its IO was visible, and why a
    # fallback backend was used, as the capture backend reported them.
    aio_mode: Mapped[str | None] = mapped_column(String(32))
    visibility: Mapped[str | None] = mapped_column(Text)
    fallback_reason: Mapped[str | None] = mapped_column(Text)

    operations: Mapped[int] = mapped_column(BigInteger, default=0)
    lanes: Mapped[int] = mapped_column(default=0)
    malformed_lines: Mapped[int] = mapped_column(BigInteger, default=0)
    # The first 100 malformed lines: [{line_no, reason, text}].
    malformed: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    t_min_us: Mapped[int | None] = mapped_column(BigInteger)
    t_max_us: Mapped[int | None] = mapped_column(BigInteger)
    bytes_read: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_written: Mapped[int] = mapped_column(BigInteger, default=0)
    # Operations per kind: {read: n, write: n, fsync: n, open: n, close: n, other: n}.
    kinds: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    # Everything else the producers said through set_meta (format, file name, capture options...).
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
