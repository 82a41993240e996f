"""One running job as the worker sees it: claimed once, heartbeating, cancellable, writing its record."""

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any

from sqlalchemy import update

from app.advisor.service import record_outcome
from app.core.config import Settings
from app.core.db import session_scope
from app.jobs.log import add_log
from app.models import Job, JobPhase, JobStatus
from app.models.base import utcnow
from worker.celery_app import worker_name
from worker.process_group import ProcessGroup

log = logging.getLogger("restorescope.job")


def queued_parameters(job_id: int) -> dict[str, Any] | None:
    """A queued job's parameters; None when the job is not queued (a redelivered or duplicated message, or a
    job cancelled while queued), which is logged and ignored."""
    with session_scope() as session:
        job = session.get(Job, job_id)
        if job is None or job.status != JobStatus.QUEUED:
            state = job.status if job else "gone"
            log.info("job %s is %s: message ignored (redelivered, duplicated or cancelled)", job_id, state)
            return None
        return dict(job.parameters)


def claim_job(job_id: int) -> bool:
    """Move a queued job to running, atomically: a redelivered or duplicate message finds it taken."""
    now = utcnow()
    with session_scope() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == JobStatus.QUEUED)
            .values(status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, worker=worker_name())
        )
        return bool(getattr(result, "rowcount", 0) == 1)


@dataclass
class JobRun:
    job_id: int
    settings: Settings
    processes: ProcessGroup = field(default_factory=ProcessGroup)
    cancelled: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _heartbeat: threading.Thread | None = None
    _last_progress_write: float = 0.0
    _phase: JobPhase | None = None
    # Called on every heartbeat, e.g. to keep a saved target's lock alive.
    on_heartbeat: list[Any] = field(default_factory=list)

    def __enter__(self) -> "JobRun":
        self._heartbeat = threading.Thread(target=self._beat, name=f"heartbeat-{self.job_id}", daemon=True)
        self._heartbeat.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=10)
        self.processes.kill()

    def _beat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_interval_s):
            try:
                self._beat_once()
            except Exception:
                log.exception("heartbeat of job %s failed; trying again", self.job_id)

    def _beat_once(self) -> None:
        with session_scope() as session:
            job = session.get(Job, self.job_id)
            if job is None:
                return
            job.heartbeat_at = utcnow()
            # A job the sweep already failed (this worker was too slow to beat) must stop as well.
            cancel = job.cancel_requested_at is not None or job.status != JobStatus.RUNNING
        for callback in self.on_heartbeat:
            callback()
        if cancel and not self.cancelled.is_set():
            self.cancelled.set()
            self.processes.kill()

    def log(self, message: str, level: str = "info", source: str = "restorescope") -> None:
        with session_scope() as session:
            add_log(session, self.job_id, message, level, source)

    def update(self, **values: Any) -> None:
        with session_scope() as session:
            session.execute(update(Job).where(Job.id == self.job_id).values(**values))

    def add_facts(self, **facts: Any) -> None:
        """Merge what the run learnt into the job's run_facts (the advisor reads them; see Job.run_facts)."""
        with session_scope() as session:
            job = session.get(Job, self.job_id)
            if job is not None:
                job.run_facts = {**(job.run_facts or {}), **facts}

    def enter_phase(self, phase: JobPhase) -> None:
        now = utcnow().isoformat()
        with session_scope() as session:
            job = session.get(Job, self.job_id)
            assert job is not None
            times = dict(job.phase_times)
            if self._phase is not None and self._phase in times:
                times[self._phase] = [times[self._phase][0], now]
            times[phase] = [now, None]
            job.phase_times, job.phase = times, phase
        self._phase = phase

    def report_progress(self, bytes_done: int, rows_done: int, force: bool = False) -> None:
        now = utcnow()
        if not force and now.timestamp() - self._last_progress_write < self.settings.progress_interval_s:
            return
        self._last_progress_write = now.timestamp()
        self.update(bytes_done=bytes_done, rows_done=rows_done, progress_at=now)

    def finish(self, status: JobStatus, error: str | None = None) -> None:
        self.enter_phase(JobPhase.DONE)
        now: datetime = utcnow()
        with session_scope() as session:
            job = session.get(Job, self.job_id)
            assert job is not None
            times = dict(job.phase_times)
            times[JobPhase.DONE] = [times[JobPhase.DONE][0], now.isoformat()]
            job.phase_times = times
            if job.status != JobStatus.RUNNING:
                # The sweep ended it first; keep its verdict rather than overwrite history.
                add_log(session, self.job_id, f"worker finished after the job was marked {job.status}")
                return
            job.status, job.finished_at, job.error = status, now, error
            add_log(session, self.job_id, error or f"job {status}", level="error" if error else "info")
            session.flush()
            # A re-run of an advisor's suggestion: its speedup over the parent is the suggestion's score.
            record_outcome(session, self.job_id)
