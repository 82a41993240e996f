"""Fixtures for the trace tests: a job row to hang a trace on, a test client, and clean tables after."""

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from app.core.db import session_scope
from app.main import app
from app.models import AuditEvent, Job, JobKind, JobLog, JobPhase, JobStatus, Role
from app.models.trace import Trace
from tests.auth import ROLE_USERS, bearer, ensure_user, session_token


@pytest.fixture(autouse=True)
def empty_job_store() -> Iterator[None]:
    yield
    with session_scope() as session:
        for model in (Trace, JobLog, Job, AuditEvent):
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
    """Logged in as an operator, who may read traces and import them."""
    ensure_user(ROLE_USERS[Role.OPERATOR], Role.OPERATOR)
    with TestClient(app, headers=bearer(session_token(ROLE_USERS[Role.OPERATOR]))) as test_client:
        yield test_client
