"""A Prometheus collector that reads the job store and Redis on every scrape.

Nothing is counted in process memory, so every API process answers the same. A component that cannot be
read gives restorescope_up{component} 0 and its metrics are left out; the scrape itself still succeeds.
"""

import logging
import platform
import tomllib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from functools import lru_cache

import redis
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from app.core.config import REPO_ROOT
from app.core.liveness import alive_workers
from app.metrics.stats import DURATION_BUCKETS_S, cumulative_buckets, median_or_none, throughput
from app.models import Job, JobKind, JobStatus

log = logging.getLogger("restorescope.metrics")

CELERY_QUEUE = "celery"  # Celery's default queue: a Redis list of that name (worker/celery_app.py keeps it)
THROUGHPUT_WINDOW = timedelta(hours=24)
FINAL_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)

SessionFactory = Callable[[], AbstractContextManager[Session]]


@lru_cache
def app_version() -> str:
    try:
        with open(REPO_ROOT / "pyproject.toml", "rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


class RestorescopeCollector(Collector):
    def __init__(self, sessions: SessionFactory, redis_url: str, now: Callable[[], datetime] | None = None) -> None:
        self._sessions = sessions
        self._redis_url = redis_url
        self._now = now or (lambda: datetime.now(UTC))

    def describe(self) -> list[Metric]:
        # Nothing to check at registration; collect() reads the store, which must not happen at import.
        return []

    def collect(self) -> Iterator[Metric]:
        now = self._now()
        up = GaugeMetricFamily(
            "restorescope_up", "1 if the component could be read during this scrape.", labels=["component"]
        )
        info = GaugeMetricFamily(
            "restorescope_build_info", "Version of the restorescope API.", labels=["version", "python"]
        )
        info.add_metric([app_version(), platform.python_version()], 1)
        yield info

        # One family fed by both components; a component that cannot be read adds no sample to it.
        depth = GaugeMetricFamily(
            "restorescope_queue_depth",
            'Jobs waiting: source="store" counts queued jobs in the job store, '
            'source="redis" the messages in the Celery queue list.',
            labels=["source", "queue"],
        )
        running_workers: set[str] = set()
        try:
            with self._sessions() as session:
                store_metrics = list(self._store(session, now, depth, running_workers))
            up.add_metric(["store"], 1)
            yield from store_metrics
        except SQLAlchemyError as error:
            log.warning("metrics: cannot read the job store: %s", error)
            up.add_metric(["store"], 0)

        try:
            redis_metrics = list(self._redis(depth, running_workers))
            up.add_metric(["redis"], 1)
            yield from redis_metrics
        except (redis.RedisError, OSError) as error:
            log.warning("metrics: cannot read Redis: %s", error)
            up.add_metric(["redis"], 0)
        yield depth
        yield up

    def _store(
        self, session: Session, now: datetime, depth: GaugeMetricFamily, running_workers: set[str]
    ) -> Iterator[Metric]:
        jobs = GaugeMetricFamily(
            "restorescope_jobs", "Jobs in the store by kind and status.", labels=["kind", "status"]
        )
        counts = {
            (kind, status): n
            for kind, status, n in session.execute(
                select(Job.kind, Job.status, func.count()).group_by(Job.kind, Job.status)
            )
        }
        # Every known kind and status is reported, 0 included, so a series does not vanish when it empties.
        for kind in sorted({*JobKind, *(k for k, _ in counts)}):
            for status in sorted({*JobStatus, *(s for k, s in counts if k == kind)}):
                jobs.add_metric([kind, status], counts.get((kind, status), 0))
        yield jobs

        yield from self._durations(session)
        yield from self._throughput(session, now)

        heartbeat = GaugeMetricFamily(
            "restorescope_job_heartbeat_age_seconds",
            "Seconds since each running job's last heartbeat (since its start when it has none yet).",
            labels=["job_id", "kind"],
        )
        running = session.execute(
            select(Job.id, Job.kind, Job.worker, Job.heartbeat_at, Job.started_at).where(
                Job.status == JobStatus.RUNNING
            )
        )
        for job_id, kind, worker, heartbeat_at, started_at in running:
            if worker:
                running_workers.add(worker)
            last = heartbeat_at or started_at
            if last is not None:
                heartbeat.add_metric([str(job_id), kind], max((now - last).total_seconds(), 0.0))
        yield heartbeat
        # Added last, so a store error part-way leaves no store sample behind.
        depth.add_metric(["store", ""], session.scalar(select(func.count()).where(Job.status == JobStatus.QUEUED)) or 0)

    def _durations(self, session: Session) -> Iterator[Metric]:
        # A histogram over every finished job in the store (not a window): its counts only grow as jobs finish,
        # like a counter, so rate() and histogram_quantile() work on it as on any Prometheus histogram, and
        # processes that scrape the same store agree. Fixed p50/p95 gauges could not be aggregated or re-windowed.
        rows = session.execute(
            select(Job.kind, Job.started_at, Job.finished_at).where(
                Job.status.in_(FINAL_STATUSES), Job.started_at.is_not(None), Job.finished_at.is_not(None)
            )
        )
        by_kind: dict[str, list[float]] = {}
        for kind, started_at, finished_at in rows:
            if started_at is not None and finished_at is not None:  # the query says so; mypy cannot know
                by_kind.setdefault(kind, []).append(max((finished_at - started_at).total_seconds(), 0.0))
        family = HistogramMetricFamily(
            "restorescope_job_duration_seconds",
            "Run time (started to finished) of all finished jobs in the store, by kind.",
            labels=["kind"],
        )
        for kind, values in sorted(by_kind.items()):
            family.add_metric([kind], cumulative_buckets(values, DURATION_BUCKETS_S), sum(values))
        yield family

    def _throughput(self, session: Session, now: datetime) -> Iterator[Metric]:
        rows = session.execute(
            select(Job.kind, Job.bytes_total, Job.phase_times).where(
                Job.status == JobStatus.SUCCEEDED,
                Job.kind.in_((JobKind.RESTORE, JobKind.BACKUP)),
                Job.finished_at >= now - THROUGHPUT_WINDOW,
            )
        )
        by_kind: dict[str, list[float]] = {}
        for kind, bytes_total, phase_times in rows:
            rate = throughput(bytes_total, phase_times)
            if rate is not None:
                by_kind.setdefault(kind, []).append(rate)
        family = GaugeMetricFamily(
            "restorescope_restore_throughput_bytes_per_second",
            "Median of bytes_total / restoring (backing_up) phase seconds over jobs that succeeded in the last 24 h.",
            labels=["kind"],
        )
        for kind, rates in sorted(by_kind.items()):
            value = median_or_none(rates)
            if value is not None:
                family.add_metric([kind], value)
        yield family

    def _redis(self, depth: GaugeMetricFamily, running_workers: set[str]) -> Iterator[Metric]:
        client = redis.Redis.from_url(self._redis_url, socket_timeout=2, socket_connect_timeout=2)
        with client:
            workers = alive_workers(client)
            queue_length = int(client.llen(CELERY_QUEUE))
        depth.add_metric(["redis", CELERY_QUEUE], queue_length)

        yield GaugeMetricFamily(
            "restorescope_workers_online", "Workers whose liveness key is in Redis.", value=len(workers)
        )
        up = GaugeMetricFamily(
            "restorescope_worker_up",
            "1 for each worker announcing itself in Redis; 0 for a worker named by a running job that does not.",
            labels=["worker"],
        )
        for name in sorted({*workers, *running_workers}):
            up.add_metric([name], 1 if name in workers else 0)
        yield up
