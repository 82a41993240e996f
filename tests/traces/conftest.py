"""Fixtures for the trace tests: a job row to hang a trace on, a test client, and clean tables after."""

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from app.core.db import session_scope
from app.main import app
from app.models import Job, JobKind, JobLog, JobPhase, JobStatus
from app.models.trace import Trace


@pytest.fixture(autouse=True)
def empty_job_store() -> Iterator[None]:
    yield
    with session_scope() as session:
        for model in (Trace, JobLog, Job):
            session.execute(delete(model))


def make_job(status: JobStatus = JobStatus.RUNNING) -> int:
    with session_scope() as session:
        job = Job(kind=JobKind.RESTORE, status=status, phase=JobPhase.RESTORING, parameters={}, phase_times={})
        session.add(job)
        session.flush()
        return job.id


@pytest.fixture
def job_id() -> int:
    return make_job()


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
