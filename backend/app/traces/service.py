"""A job's trace: opened by the worker (or an import), summarised in the job store, read by the API.

The files under ``trace_dir`` hold the records; the ``traces`` row holds the summary the job list and the
trace page need without opening files. While a trace records, the row says "recording" and the live
counts come from the trace's meta.json; when the writer closes, its summary is copied into the row.
A worker that dies leaves the row "recording": once its job has ended, the trace reads as "failed"
(what was flushed before the crash stays readable).
"""

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.core.errors import NotFound
from app.models import Job, JobStatus
from app.models.base import utcnow
from app.models.trace import Trace, TraceSource, TraceStatus
from app.traces.store import TraceSummary, TraceWriter, read_summary, trace_dir

UnitOfWork = Callable[[], AbstractContextManager[Session]]

# set_meta keys that have their own column in the summary row.
_COLUMNS_FROM_META = ("backend", "aio_mode", "visibility", "fallback_reason")


def open_job_trace(
    job_id: int,
    *,
    source: str = TraceSource.CAPTURE,
    backend: str,
    settings: Settings | None = None,
    unit_of_work: UnitOfWork = session_scope,
    flush_every_ops: int = 200_000,
    flush_every_s: float = 1.0,
) -> TraceWriter:
    """Start (or restart) the job's trace: a fresh directory and a "recording" summary row.

    Closing the writer copies its summary into the row; ``close(status="failed")`` (or leaving a
    ``with`` block by an exception) marks it failed.
    """
    settings = settings or get_settings()
    with unit_of_work() as session:
        start_trace_row(session, job_id, source=source, backend=backend)

    def store(summary: TraceSummary) -> None:
        with unit_of_work() as session:
            store_summary(session, job_id, summary)

    return TraceWriter(
        trace_dir(settings, job_id), flush_every_ops=flush_every_ops, flush_every_s=flush_every_s, on_close=store
    )


def start_trace_row(session: Session, job_id: int, *, source: str, backend: str) -> Trace:
    """The job's summary row, new or reset to empty "recording" (a retried capture starts over)."""
    trace = session.scalar(select(Trace).where(Trace.job_id == job_id))
    if trace is None:
        trace = Trace(job_id=job_id)
        session.add(trace)
    trace.source, trace.backend, trace.status = source, backend, TraceStatus.RECORDING
    trace.aio_mode = trace.visibility = trace.fallback_reason = None
    trace.operations = trace.lanes = trace.malformed_lines = trace.bytes_read = trace.bytes_written = 0
    trace.malformed, trace.kinds, trace.meta = [], {}, {}
    trace.t_min_us = trace.t_max_us = None
    trace.created_at, trace.finished_at = utcnow(), None
    session.flush()
    return trace


def _summary_columns(summary: TraceSummary) -> dict[str, Any]:
    meta = dict(summary.meta)
    columns: dict[str, Any] = {name: meta.pop(name) for name in _COLUMNS_FROM_META if meta.get(name) is not None}
    lanes = {lane["tid"] for lane in summary.lanes} | set(summary.lane_totals)
    columns.update(
        operations=summary.operations,
        lanes=len(lanes),
        malformed_lines=summary.malformed_lines,
        malformed=summary.malformed,
        t_min_us=summary.t_min_us,
        t_max_us=summary.t_max_us,
        bytes_read=summary.bytes_read,
        bytes_written=summary.bytes_written,
        kinds=summary.kinds,
        meta=meta,
    )
    return columns


def store_summary(session: Session, job_id: int, summary: TraceSummary) -> Trace:
    trace = session.scalar(select(Trace).where(Trace.job_id == job_id))
    if trace is None:
        raise NotFound(f"job {job_id} has no trace")
    for name, value in _summary_columns(summary).items():
        setattr(trace, name, value)
    trace.backend = str(summary.meta.get("backend") or trace.backend)
    trace.status = summary.status
    trace.finished_at = utcnow()
    session.flush()
    return trace


def effective_status(trace: Trace, job: Job) -> str:
    """A trace still "recording" after its job ended was left by a worker that died: it is failed."""
    if trace.status == TraceStatus.RECORDING and JobStatus(job.status).is_final:
        return TraceStatus.FAILED
    return trace.status


def get_trace_row(session: Session, job_id: int) -> tuple[Job, Trace]:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job with id {job_id}")
    trace = session.scalar(select(Trace).where(Trace.job_id == job_id))
    if trace is None:
        raise NotFound(f"job {job_id} has no IO trace: it was run without capture, or it has not started recording yet")
    return job, trace


def live_summary(settings: Settings, trace: Trace) -> TraceSummary | None:
    """meta.json of the trace's files (the live counts while recording); None if the files are gone."""
    return read_summary(trace_dir(settings, trace.job_id))


def trace_files(settings: Settings, job_id: int) -> Path:
    return trace_dir(settings, job_id)
