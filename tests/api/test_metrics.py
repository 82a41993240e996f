"""GET /metrics: read from real job rows and a real Redis, parsed back with prometheus_client's own parser."""

import platform
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.api.static import mount_frontend
from app.core.config import get_settings
from app.core.db import session_scope
from app.core.liveness import KEY_PREFIX, announce_worker
from app.main import app
from app.metrics.collector import CELERY_QUEUE, RestorescopeCollector
from app.metrics.routes import router as metrics_router
from app.metrics.stats import cumulative_buckets, throughput
from app.models import Job, JobKind, JobPhase, JobStatus
from tests.conftest import free_port

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
NOW = datetime.now(UTC)


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def add_job(kind: str, status: str, **fields: Any) -> int:
    with session_scope() as session:
        job = Job(kind=kind, status=status, parameters={}, **fields)
        session.add(job)
        session.flush()
        return job.id


def iso(moment: datetime) -> str:
    return moment.isoformat()


@pytest.fixture
def broker(redis_server: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server)
    # Jobs created by earlier API tests leave their Celery messages in this Redis (no worker runs there).
    client.delete(CELERY_QUEUE, *client.keys(KEY_PREFIX + "*"))
    yield client
    client.delete(CELERY_QUEUE, *client.keys(KEY_PREFIX + "*"))
    client.close()


def scrape(client: TestClient) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    # Prometheus refuses a whole scrape that describes one metric twice.
    described = [line.split()[2] for line in response.text.splitlines() if line.startswith("# HELP ")]
    assert len(described) == len(set(described)), described
    return parse(response.text)


def test_job_counts_durations_throughput_and_queue(client: TestClient, broker: redis.Redis) -> None:
    for _ in range(2):
        add_job(JobKind.RESTORE, JobStatus.QUEUED)
    add_job(JobKind.RESTORE, JobStatus.FAILED, started_at=NOW - timedelta(seconds=40), finished_at=NOW)
    restore_start = NOW - timedelta(seconds=250)
    add_job(
        JobKind.RESTORE,
        JobStatus.SUCCEEDED,
        phase=JobPhase.DONE,
        started_at=restore_start,
        finished_at=NOW - timedelta(seconds=10),
        bytes_total=2_000_000_000,
        phase_times={
            JobPhase.STARTING_SERVER: [iso(restore_start), iso(restore_start + timedelta(seconds=20))],
            # 2 GB in 200 s of restoring: 10 MB/s
            JobPhase.RESTORING: [
                iso(restore_start + timedelta(seconds=20)),
                iso(restore_start + timedelta(seconds=220)),
            ],
        },
    )
    add_job(JobKind.BACKUP, JobStatus.CANCELLED)
    broker.rpush(CELERY_QUEUE, b"one", b"two", b"three")

    samples = scrape(client)

    assert value(samples, "restorescope_jobs", kind="restore", status="queued") == 2
    assert value(samples, "restorescope_jobs", kind="restore", status="succeeded") == 1
    assert value(samples, "restorescope_jobs", kind="restore", status="failed") == 1
    assert value(samples, "restorescope_jobs", kind="restore", status="running") == 0
    assert value(samples, "restorescope_jobs", kind="backup", status="cancelled") == 1
    # Finished restores took 40 s and 240 s; the cancelled backup never started, so it has no duration.
    assert value(samples, "restorescope_job_duration_seconds_count", kind="restore") == 2
    assert value(samples, "restorescope_job_duration_seconds_sum", kind="restore") == pytest.approx(280)
    assert value(samples, "restorescope_job_duration_seconds_bucket", kind="restore", le="60.0") == 1
    assert value(samples, "restorescope_job_duration_seconds_bucket", kind="restore", le="300.0") == 2
    assert value(samples, "restorescope_job_duration_seconds_bucket", kind="restore", le="+Inf") == 2
    assert ("restorescope_job_duration_seconds_count", frozenset({("kind", "backup")})) not in samples
    assert value(samples, "restorescope_restore_throughput_bytes_per_second", kind="restore") == pytest.approx(1e7)
    assert value(samples, "restorescope_queue_depth", source="store", queue="") == 2
    assert value(samples, "restorescope_queue_depth", source="redis", queue="celery") == 3
    assert value(samples, "restorescope_up", component="store") == 1
    assert value(samples, "restorescope_up", component="redis") == 1
    assert value(samples, "restorescope_build_info", version="0.1.0", python=platform.python_version()) == 1


def test_workers_and_heartbeats(client: TestClient, broker: redis.Redis) -> None:
    announce_worker(broker, "alive@host:1")
    job_id = add_job(
        JobKind.RESTORE,
        JobStatus.RUNNING,
        worker="dead@host:2",
        started_at=NOW - timedelta(seconds=60),
        heartbeat_at=datetime.now(UTC) - timedelta(seconds=5),
    )

    samples = scrape(client)

    assert value(samples, "restorescope_workers_online") == 1
    assert value(samples, "restorescope_worker_up", worker="alive@host:1") == 1
    # A running job names a worker that no longer announces itself: that is the one to alert on.
    assert value(samples, "restorescope_worker_up", worker="dead@host:2") == 0
    age = value(samples, "restorescope_job_heartbeat_age_seconds", job_id=str(job_id), kind="restore")
    assert 5 <= age < 60


def test_redis_unreachable_still_answers(client: TestClient) -> None:
    closed = get_settings().model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    app.dependency_overrides[get_settings] = lambda: closed
    try:
        add_job(JobKind.RESTORE, JobStatus.QUEUED)
        samples = scrape(client)
    finally:
        app.dependency_overrides.pop(get_settings)
    assert value(samples, "restorescope_up", component="redis") == 0
    assert value(samples, "restorescope_up", component="store") == 1
    assert value(samples, "restorescope_queue_depth", source="store", queue="") == 1
    assert ("restorescope_workers_online", frozenset()) not in samples


def test_store_unreadable_still_answers(redis_server: str) -> None:
    @contextmanager
    def broken_store() -> Iterator[Session]:
        raise OperationalError("SELECT 1", {}, Exception("the job store is down"))
        yield  # pragma: no cover

    registry = CollectorRegistry()
    registry.register(RestorescopeCollector(broken_store, redis_server))
    samples = parse(generate_latest(registry).decode())
    assert value(samples, "restorescope_up", component="store") == 0
    assert value(samples, "restorescope_up", component="redis") == 1
    assert not any(name == "restorescope_jobs" for name, _ in samples)


def test_metrics_are_open_without_a_scrape_token(anonymous_client: TestClient) -> None:
    """No session needed: Prometheus scrapes without logging in; the counts name no user, path or secret."""
    response = anonymous_client.get("/metrics")
    assert response.status_code == 200 and "restorescope_up" in response.text


def test_a_scrape_token_when_one_is_set(anonymous_client: TestClient) -> None:
    guarded = get_settings().model_copy(update={"metrics_token": SecretStr("scrape-token-123")})
    app.dependency_overrides[get_settings] = lambda: guarded
    try:
        missing = anonymous_client.get("/metrics")
        wrong = anonymous_client.get("/metrics", headers={"Authorization": "Bearer scrape-token-124"})
        right = anonymous_client.get("/metrics", headers={"Authorization": "Bearer scrape-token-123"})
    finally:
        app.dependency_overrides.pop(get_settings)
    assert missing.status_code == wrong.status_code == 401
    assert "RESTORESCOPE_METRICS_TOKEN" in missing.json()["detail"]
    assert right.status_code == 200 and "restorescope_up" in right.text


def test_metrics_is_not_the_frontend(tmp_path: Path) -> None:
    # The built UI answers every unknown GET with index.html; /metrics must still be the metrics.
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<html>app</html>")
    spa = FastAPI()
    spa.include_router(metrics_router)
    mount_frontend(spa, tmp_path)
    with TestClient(spa) as spa_client:
        response = spa_client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "restorescope_up" in response.text


T0 = "2026-11-23T10:00:00+00:00"
T100 = "2026-11-23T10:01:40+00:00"


@pytest.mark.parametrize(
    ("bytes_total", "phase_times", "expected"),
    [
        (1_000, {"restoring": [T0, T100]}, 10.0),
        (1_000, {"backing_up": [T0, T100]}, 10.0),
        (1_000, {"restoring": [T0, None]}, None),  # still restoring
        (1_000, {"restoring": [T100, T0]}, None),  # clock went backwards
        (1_000, {"restoring": [T0]}, None),  # malformed
        (1_000, {}, None),
        (None, {"restoring": [T0, T100]}, None),
        (0, {"restoring": [T0, T100]}, None),
    ],
)
def test_throughput(bytes_total: int | None, phase_times: dict[str, list[str | None]], expected: float | None) -> None:
    assert throughput(bytes_total, phase_times) == expected


def test_cumulative_buckets() -> None:
    assert cumulative_buckets([5, 30, 31, 1e6], (10, 30, 60)) == [("10.0", 1), ("30.0", 2), ("60.0", 3), ("+Inf", 4)]
    assert cumulative_buckets([], (10,)) == [("10.0", 0), ("+Inf", 0)]
