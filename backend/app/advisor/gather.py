"""Gather the evidence of one run from the job store and its trace files: the job's parameters and run facts,
the server's variables and status deltas, the threads' CPU and IO over the main phase, the machine's counters,
and other backups of the same tables."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.advisor import trace_facts
from app.advisor.alternatives import find_alternatives, list_directory
from app.advisor.evidence import Alternative, Evidence, Host, JobFacts, PrepareFacts
from app.backups.service import scan_backups
from app.core.config import Settings
from app.models import Backup, Job, JobKind, JobPhase, ServerSnapshot, Trace, VerificationResult
from app.traces.reader import TraceData, open_trace_data
from app.traces.store import trace_dir

PHYSICAL_RUNNERS = frozenset({"mariabackup", "xtrabackup"})
_STATEMENT_FORMATS = frozenset({"mysqldump", "mydumper"})


def main_phase(job: Job) -> str:
    if job.kind == JobKind.IMPORT:
        return "trace"
    return JobPhase.PREPARING if job.parameters.get("runner") in PHYSICAL_RUNNERS else JobPhase.RESTORING


def _us(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1_000_000)


def phase_window(job: Job, trace: Trace | None) -> tuple[int, int] | None:
    """The main phase in microseconds since the epoch: as the job recorded it, or the trace's span for an import.
    A phase the job left without an end (it failed or was cancelled in it) ends when the job did."""
    phase = main_phase(job)
    if phase == "trace":
        if trace is None or trace.t_min_us is None or trace.t_max_us is None:
            return None
        return trace.t_min_us, max(trace.t_max_us, trace.t_min_us + 1)
    times = job.phase_times.get(phase)
    if not times or not times[0]:
        return None
    start = _us(times[0])
    end = _us(times[1]) if times[1] else (int(job.finished_at.timestamp() * 1_000_000) if job.finished_at else None)
    if end is None or end <= start:
        return None
    return start, end


def phase_seconds(job: Job) -> float | None:
    window = phase_window(job, None) if job.kind != JobKind.IMPORT else None
    return None if window is None else (window[1] - window[0]) / 1e6


def _snapshots(session: Session, job_id: int) -> tuple[dict[str, str], dict[str, str], dict[str, float]]:
    rows = {
        s.moment: s
        for s in session.scalars(
            select(ServerSnapshot).where(ServerSnapshot.job_id == job_id).order_by(ServerSnapshot.id)
        )
    }
    end = rows.get("end") or rows.get("start")
    variables = dict(end.variables) if end else {}
    status_end = dict(end.status) if end else {}
    delta: dict[str, float] = {}
    if "start" in rows and "end" in rows:
        start = rows["start"].status
        for name, value in rows["end"].status.items():
            try:
                delta[name] = float(value) - float(start.get(name, "0"))
            except ValueError:
                continue
    return variables, status_end, delta


def _host(job: Job) -> Host:
    facts: dict[str, Any] = (job.run_facts or {}).get("host") or {}
    return Host(
        cpus=int(facts.get("cpus") or 1),
        memory_bytes=facts.get("memory_bytes"),
        disk_device=facts.get("disk_device"),
        disk_rotational=facts.get("disk_rotational"),
    )


def _tables(session: Session, job_id: int) -> tuple[tuple[str, str], ...]:
    rows = session.execute(
        select(VerificationResult.database, VerificationResult.table).where(VerificationResult.job_id == job_id)
    )
    return tuple(sorted({(str(database), str(table)) for database, table in rows}))


def _job_facts(job: Job, backup: Backup | None, trace: Trace | None, tables: tuple[tuple[str, str], ...]) -> JobFacts:
    params, facts = job.parameters, job.run_facts or {}
    kind = main_phase(job)
    target = params.get("target") or {}
    threads = facts.get("threads")
    if threads is None and params.get("runner") == "mysql":
        threads = 1
    return JobFacts(
        kind="import" if kind == "trace" else "prepare" if kind == JobPhase.PREPARING else "restore",
        runner=facts.get("runner") or params.get("runner"),
        backup_path=params.get("backup_path"),
        backup_format=backup.format if backup else params.get("backup_format"),
        backup_compression=backup.compression if backup else None,
        backup_bytes=backup.size_bytes if backup else job.bytes_total,
        database=params.get("database"),
        target_kind=target.get("kind"),
        threads=threads if threads is not None else params.get("threads"),
        chunk_size=facts.get("chunk_size") or params.get("chunk_size"),
        use_memory=params.get("use_memory"),
        read_io_threads=params.get("read_io_threads"),
        write_io_threads=params.get("write_io_threads"),
        capture=params.get("capture"),
        aio_mode=trace.aio_mode if trace else None,
        tables=tables,
    )


def _prepare(job: Job) -> PrepareFacts | None:
    facts = (job.run_facts or {}).get("prepare")
    if not facts or facts.get("already_prepared"):
        return None
    return PrepareFacts(
        batches=int(facts.get("batches") or 0),
        use_memory=facts.get("use_memory"),
        redo_bytes=facts.get("redo_bytes"),
        prepare_seconds=float(facts.get("prepare_seconds") or 0.0),
        copy_seconds=float(facts.get("copy_seconds") or 0.0),
    )


def _alternatives(session: Session, settings: Settings, facts: JobFacts, backup: Backup | None) -> list[Alternative]:
    """Only for runs another backup could help: statements the server parses, or a compressed file."""
    if backup is None or facts.kind != "restore" or facts.backup_path is None:
        return []
    if backup.format not in _STATEMENT_FORMATS and backup.compression is None:
        return []
    candidates = [
        (b.path, b.format, b.compression, b.size_bytes, dict(b.details or {}))
        for b in scan_backups(session, settings.resolved_backup_roots)
        if not b.missing
    ]
    databases = [str(d) for d in (backup.details or {}).get("databases") or []]
    return find_alternatives(facts.backup_path, backup.format, databases, set(facts.tables), candidates, list_directory)


def gather(session: Session, settings: Settings, job: Job) -> Evidence | None:
    """The run's evidence, or None when it has no main phase to look at (it never got that far)."""
    trace = session.scalar(select(Trace).where(Trace.job_id == job.id))
    window = phase_window(job, trace)
    if window is None:
        return None
    t0, t1 = window
    backup = session.get(Backup, job.backup_id) if job.backup_id is not None else None
    facts = _job_facts(job, backup, trace, _tables(session, job.id))
    variables, status_end, delta = _snapshots(session, job.id)
    data: TraceData | None = open_trace_data(trace_dir(settings, job.id)) if trace is not None else None
    evidence = Evidence(
        job=facts,
        host=_host(job),
        phase=main_phase(job),
        t0_us=t0,
        t1_us=t1,
        variables=variables,
        status_delta=delta,
        status_end=status_end,
        prepare=_prepare(job),
        alternatives=tuple(_alternatives(session, settings, facts, backup)),
    )
    if data is None:
        return evidence
    lanes = trace_facts.lane_activity(data, t0, t1)
    has_trace = data.summary.operations > 0
    if has_trace:
        lanes = trace_facts.with_io(data, lanes, t0, t1)
    return replace(
        evidence,
        lanes=tuple(lanes),
        has_cpu=any(lane.sampled_s > 0 for lane in lanes),
        has_trace=has_trace,
        buckets=trace_facts.BUCKETS,
        busy_cores=trace_facts.counter_mean(data, "cpu.busy_cores", t0, t1),
        iowait_pct=trace_facts.counter_mean(data, "cpu.iowait", t0, t1),
        io=trace_facts.io_facts(data, t0, t1) if has_trace else evidence.io,
        checkpoint_age_mb=trace_facts.counter_series(data, "server.checkpoint_age", t0, t1),
    )
