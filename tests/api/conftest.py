import gzip
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select

from app.core.db import session_scope
from app.main import app
from app.models import (
    AuditEvent,
    Backup,
    Drill,
    Job,
    JobKind,
    JobLog,
    JobPhase,
    Notification,
    ProtectedDatabase,
    Role,
    ServerSnapshot,
    Target,
    User,
    UserSession,
    VerificationResult,
)
from tests.auth import ONE_TIME_USER, ROLE_USERS, bearer, ensure_user, session_token

DUMP_HEAD = b"""-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: localhost    Database: shop
-- ------------------------------------------------------
-- Server version\t10.11.19-MariaDB-0+deb12u1

--
-- Current Database: `shop`
--

CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;

USE `shop`;
CREATE TABLE `t` (`id` int NOT NULL, PRIMARY KEY (`id`));
INSERT INTO `t` VALUES (1),(2),(3);
"""

NODB_HEAD = b"""-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: localhost    Database: shop
-- ------------------------------------------------------
-- Server version\t10.11.19-MariaDB-0+deb12u1
CREATE TABLE `t` (`id` int NOT NULL, PRIMARY KEY (`id`));
INSERT INTO `t` VALUES (1),(2),(3);
"""


def _clear_job_store(kept_users: list[int]) -> None:
    with session_scope() as session:
        for model in (
            Notification,
            Drill,
            ProtectedDatabase,
            VerificationResult,
            ServerSnapshot,
            JobLog,
            Job,
            Target,
            Backup,
            AuditEvent,
            UserSession,
        ):
            session.execute(delete(model))
        session.execute(delete(User).where(User.id.not_in(kept_users)))


# The role users are made once per session (an argon2 hash costs a few tenths of a second here); a test's own
# users are removed after it.
@pytest.fixture(scope="session")
def kept_users(job_store: None) -> list[int]:
    kept = [ensure_user(name, role) for role, name in ROLE_USERS.items()]
    kept.append(ensure_user(ONE_TIME_USER, Role.ADMIN))
    with session_scope() as session:
        one_time = session.get(User, kept[-1])
        assert one_time is not None
        one_time.must_change_password = True
    return kept


@pytest.fixture(scope="session", autouse=True)
def empty_at_first(kept_users: list[int]) -> None:
    """Whatever other test directories left (jobs, audit events) is not these tests' to see."""
    _clear_job_store(kept_users)


@pytest.fixture(autouse=True)
def empty_job_store(kept_users: list[int]) -> Iterator[None]:
    yield
    _clear_job_store(kept_users)


@pytest.fixture
def anonymous_client() -> Iterator[TestClient]:
    """A client with no session, as a browser before the login."""
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def client_as() -> Iterator[Callable[[Role], TestClient]]:
    """A client logged in (with a session of its own) as the test user of a role."""
    clients: list[TestClient] = []

    def make(role: Role) -> TestClient:
        test_client = TestClient(app, headers=bearer(session_token(ROLE_USERS[role])))
        clients.append(test_client.__enter__())
        return test_client

    yield make
    for test_client in clients:
        test_client.__exit__(None, None, None)


@pytest.fixture
def client(client_as: Callable[[Role], TestClient]) -> TestClient:
    """Logged in as an admin, who may do everything: the tests of what the API does, not of who may."""
    return client_as(Role.ADMIN)


@pytest.fixture
def dumps(backup_root: Path) -> Iterator[dict[str, Path]]:
    folder = backup_root / "api"
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "plain": folder / "shop.sql",
        "gzip": folder / "shop.sql.gz",
        "nodb": folder / "nodb.sql",
    }
    files["plain"].write_bytes(DUMP_HEAD)
    files["gzip"].write_bytes(gzip.compress(DUMP_HEAD))
    files["nodb"].write_bytes(NODB_HEAD)
    mydumper = folder / "mydumper-dir"
    mydumper.mkdir(exist_ok=True)
    (mydumper / "metadata").write_text("Started dump at: 2026-11-01 00:00:00\n")
    files["mydumper"] = mydumper
    yield files
    for path in files.values():
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink(missing_ok=True)


def error_message(response_json: dict[str, object]) -> str:
    detail = response_json["detail"]
    assert isinstance(detail, list)
    return " | ".join(str(item["msg"]) for item in detail)


def error_fields(response_json: dict[str, object]) -> list[str]:
    detail = response_json["detail"]
    assert isinstance(detail, list)
    return [".".join(str(p) for p in item["loc"][1:]) for item in detail]


@pytest.fixture
def now() -> datetime:
    """The test's clock, read when it starts: what it creates afterwards is newer."""
    return datetime.now(UTC)


@pytest.fixture
def shop_backup(client: TestClient, backup_root: Path) -> Iterator[Backup]:
    folder = backup_root / "trends"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.sql").write_bytes(DUMP_HEAD + b"-- padding\n" * 1000)
    client.get("/api/v1/backups")  # scanned into the backups table
    with session_scope() as session:
        backup = session.scalars(select(Backup).where(Backup.path == str((folder / "shop.sql").resolve()))).one()
        session.expunge(backup)
    yield backup
    shutil.rmtree(folder)


def add_restore(backup: Backup, *, days_ago: float, restore_s: float, status: str = "succeeded", **extra: Any) -> int:
    """A finished restore job row, with phase times as the worker writes them: 5 s of server start, the restore,
    3 s of verification."""
    start = datetime.now(UTC) - timedelta(days=days_ago)
    restoring = start + timedelta(seconds=5)
    verifying = restoring + timedelta(seconds=restore_s)
    end = verifying + timedelta(seconds=3)
    with session_scope() as session:
        job = Job(
            kind=JobKind.RESTORE,
            status=status,
            phase=JobPhase.DONE,
            parameters={"backup_path": backup.path, "backup_format": "mysqldump", "runner": "loader", **extra},
            backup_id=backup.id,
            bytes_total=backup.size_bytes,
            created_at=start,
            started_at=start,
            finished_at=end,
            phase_times={
                "starting_server": [start.isoformat(), restoring.isoformat()],
                "restoring": [restoring.isoformat(), verifying.isoformat()],
                "verifying": [verifying.isoformat(), end.isoformat()],
            },
            error="the sandbox ran out of disk" if status == "failed" else None,
            backup_verdict="restores" if status == "succeeded" else None,
        )
        session.add(job)
        session.flush()
        return job.id
