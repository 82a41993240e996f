"""A job's trace: opened by the worker (or an import), summarised in the job store, read by the API.

The files under ``trace_dir`` hold the records; the ``traces`` row holds the summary the job list and the
trace page need without opening files. While a trace records, the row says "recording" and the live
counts come from the trace's meta.json; when the writer closes, its summary is copied into the row.
A worker that dies leaves the row "recording": once its job has ended, the trace reads as "failed"
(what was flushed before the crash stays readable).
"""

import contextlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Final

from pydantic_core import to_json
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.core.errors import InvalidRequest, NotFound
from app.models import Job, JobStatus
from app.models.base import utcnow
from app.models.trace import Trace, TraceSource, TraceStatus
from app.traces import stats, window
from app.traces.compact import WHOLE_STATS_FILE
from app.traces.reader import TraceData, open_trace_data
from app.traces.store import TraceClosed, TraceSummary, TraceWriter, read_summary, trace_dir
from app.traces.window import Filters

UnitOfWork = Callable[[], AbstractContextManager[Session]]

# set_meta keys that have their own column in the summary row.
_COLUMNS_FROM_META = ("backend", "aio_mode", "visibility", "fallback_reason")


# Writers open in this process, by job, with the creation time of the summary row they belong to.
_open_writers: dict[int, tuple[TraceWriter, datetime]] = {}
_open_writers_lock = threading.Lock()


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
    """Start the job's trace: a fresh directory and a "recording" summary row; returns its writer.

    Closing the writer copies its summary into the row; ``close(status="failed")`` (or leaving a
    ``with`` block by an exception) marks it failed. Called again while the job's writer is open in this
    process and its row still records (the IO capture and the CPU sampler of one restore), it returns
    that same writer, shared: each caller closes it once, and the trace ends at the last close.
    """
    settings = settings or get_settings()
    with _open_writers_lock, unit_of_work() as session:
        row = session.scalar(select(Trace).where(Trace.job_id == job_id))
        open_writer = _open_writers.pop(job_id, None)
        if open_writer is not None and row is not None and row.status == TraceStatus.RECORDING:
            writer, created_at = open_writer
            if row.created_at == created_at:
                with contextlib.suppress(TraceClosed):
                    shared = writer.share()
                    _open_writers[job_id] = open_writer
                    return shared
        row = start_trace_row(session, job_id, source=source, backend=backend)
        created_at = row.created_at

        def store(summary: TraceSummary) -> None:
            with _open_writers_lock:
                if job_id in _open_writers and _open_writers[job_id][0] is writer:
                    del _open_writers[job_id]
            with unit_of_work() as session:
                store_summary(session, job_id, summary)

        writer = TraceWriter(
            trace_dir(settings, job_id), flush_every_ops=flush_every_ops, flush_every_s=flush_every_s, on_close=store
        )
        _open_writers[job_id] = (writer, created_at)
        return writer


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


def read_trace(session: Session, settings: Settings, job_id: int) -> dict[str, Any]:
    """The summary of a job's trace; while it records, the counts are the writer's latest."""
    job, trace = get_trace_row(session, job_id)
    live = read_summary(trace_dir(settings, job_id)) or TraceSummary()
    meta = dict(live.meta)
    default_role = "pid" if trace.backend == "juicefs" else "thread"
    lanes: dict[int, dict[str, Any]] = {
        tid: {"tid": tid, "role": f"{default_role} {tid}"} for tid in sorted(live.lane_totals)
    }
    for lane in live.lanes:
        lanes[int(lane["tid"])] = dict(lane)
    for tid, lane in lanes.items():
        totals = live.lane_totals.get(tid)
        lane["operations"] = totals.operations if totals else 0
        lane["busy_us"] = totals.busy_us if totals else 0
    return {
        "job_id": job_id,
        "source": trace.source,
        "backend": str(meta.pop("backend", None) or trace.backend),
        "status": effective_status(trace, job),
        "aio_mode": meta.pop("aio_mode", None) or trace.aio_mode,
        "visibility": meta.pop("visibility", None) or trace.visibility,
        "fallback_reason": meta.pop("fallback_reason", None) or trace.fallback_reason,
        "operations": live.operations,
        "malformed_lines": live.malformed_lines,
        "malformed": live.malformed,
        "t_min_us": live.t_min_us,
        "t_max_us": live.t_max_us,
        "bytes_read": live.bytes_read,
        "bytes_written": live.bytes_written,
        "lanes": [lanes[tid] for tid in sorted(lanes)],
        "kinds": live.kinds,
        "counters": [{"track": track, "unit": unit} for track, unit in sorted(live.counters.items())],
        "meta": meta,
    }


def open_data(session: Session, settings: Settings, job_id: int) -> TraceData:
    get_trace_row(session, job_id)
    data = open_trace_data(trace_dir(settings, job_id))
    if data is None:
        raise NotFound(f"the trace files of job {job_id} are missing from {trace_dir(settings, job_id)}")
    return data


def time_range(data: TraceData, t0_us: int | None, t1_us: int | None) -> tuple[int, int]:
    """The asked window, the whole trace where a bound is left out."""
    t0 = t0_us if t0_us is not None else (data.summary.t_min_us or 0)
    t1 = t1_us if t1_us is not None else max(data.summary.t_max_us or 0, t0 + 1)
    if t1 <= t0:
        raise InvalidRequest(f"t1_us ({t1}) must be after t0_us ({t0})", field="t1_us")
    return t0, t1


def read_window(
    session: Session,
    settings: Settings,
    job_id: int,
    *,
    t0_us: int | None,
    t1_us: int | None,
    width_px: int,
    filters: Filters,
    columns: bool = False,
) -> bytes:
    """The window as JSON. Answers are kept for the same question about the same state of the trace
    (its counts and lanes as meta.json says, rewritten at every flush, so a growing trace never gets a
    stale answer): the timeline asks the same zoomed-out view again and again."""
    data = open_data(session, settings, job_id)
    t0, t1 = time_range(data, t0_us, t1_us)
    key = (str(data.directory), _state(data), t0, t1, width_px, filters, columns)
    with _windows_lock:
        if key in _windows:
            _windows.move_to_end(key)
            return _windows[key]
    encoded = to_json(window.read_window(data, t0=t0, t1=t1, width_px=width_px, filters=filters, columns=columns))
    with _windows_lock:
        _windows[key] = encoded
        while len(_windows) > WINDOW_CACHE_ENTRIES or sum(map(len, _windows.values())) > WINDOW_CACHE_BYTES:
            _windows.popitem(last=False)
    return encoded


WINDOW_CACHE_ENTRIES: Final = 64
WINDOW_CACHE_BYTES: Final = 64 * 2**20
_windows: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
_windows_lock = threading.Lock()


def _state(data: TraceData) -> tuple[Any, ...]:
    """What the trace holds as of the meta.json this answer was read with (file times are too coarse:
    two flushes can share one)."""
    s = data.summary
    lanes = tuple((lane["tid"], lane["role"]) for lane in s.lanes)
    return (s.trace_id, s.status, s.compacted, s.parts, s.operations, s.spans, s.counter_samples, lanes)


def read_stats(
    session: Session, settings: Settings, job_id: int, *, t0_us: int | None, t1_us: int | None, filters: Filters
) -> dict[str, Any]:
    data = open_data(session, settings, job_id)
    whole = data.directory / WHOLE_STATS_FILE
    if t0_us is None and t1_us is None and filters == Filters() and data.summary.compacted and whole.exists():
        cached: dict[str, Any] = json.loads(whole.read_text())
        return cached
    t0, t1 = time_range(data, t0_us, t1_us)
    return stats.read_stats(data, t0=t0, t1=t1, filters=filters)


def read_operations(
    session: Session,
    settings: Settings,
    job_id: int,
    *,
    t0_us: int | None,
    t1_us: int | None,
    filters: Filters,
    offset: int,
    limit: int,
) -> dict[str, Any]:
    data = open_data(session, settings, job_id)
    t0, t1 = time_range(data, t0_us, t1_us)
    return stats.read_operations(data, t0=t0, t1=t1, filters=filters, offset=offset, limit=limit)
