"""Backups found under the roots, saved targets and their secrets, health, and the dead-worker sweep."""

from datetime import timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select, text

from app.core.config import get_settings
from app.core.db import get_engine, session_scope
from app.jobs.sweep import fail_dead_jobs
from app.models import Job, JobStatus, Target
from app.models.base import utcnow
from tests.api.conftest import error_message


def test_backups_are_listed_with_format_compression_and_size(client: TestClient, dumps: dict[str, Path]) -> None:
    listing = client.get("/api/v1/backups").json()
    by_name = {Path(b["path"]).name: b for b in listing["data"]}
    assert by_name["shop.sql"]["format"] == "mysqldump" and by_name["shop.sql"]["compression"] is None
    assert by_name["shop.sql.gz"]["compression"] == "gzip"
    assert by_name["shop.sql.gz"]["size_bytes"] == dumps["gzip"].stat().st_size
    assert by_name["shop.sql"]["details"]["databases"] == ["shop"]
    assert by_name["shop.sql"]["details"]["server_version"] == "10.11.19-MariaDB-0+deb12u1"
    assert by_name["nodb.sql"]["details"]["has_use_statements"] is False
    assert by_name["mydumper-dir"]["format"] == "mydumper" and by_name["mydumper-dir"]["restorable"] is False
    assert by_name["shop.sql"]["restorable"] is True
    assert listing["roots"] == [str(get_settings().resolved_backup_roots[0].resolve())]

    dumps["nodb"].unlink()
    names = {Path(b["path"]).name for b in client.get("/api/v1/backups").json()["data"]}
    assert "nodb.sql" not in names


def test_a_folder_of_dumps_with_notes_is_not_a_tab_dump(client: TestClient, dumps: dict[str, Path]) -> None:
    notes = dumps["plain"].parent / "row-counts.txt"
    tab = dumps["plain"].parent / "tab"
    tab.mkdir()
    (tab / "t.sql").write_text("CREATE TABLE t (id int);\n")
    (tab / "t.txt").write_text("1\n2\n")
    notes.write_text("shop.t 3\n")
    try:
        by_name = {Path(b["path"]).name: b["format"] for b in client.get("/api/v1/backups").json()["data"]}
        assert by_name["shop.sql"] == "mysqldump" and by_name["tab"] == "mysqldump-tab"
        assert "api" not in by_name
    finally:
        notes.unlink()
        for child in tab.iterdir():
            child.unlink()
        tab.rmdir()


def test_symlink_out_of_the_root_is_not_listed(client: TestClient, dumps: dict[str, Path], tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.sql"
    outside.write_bytes(b"-- MariaDB dump 10.19\n")
    link = dumps["plain"].parent / "elsewhere.sql"
    link.symlink_to(outside)
    try:
        names = {Path(b["path"]).name for b in client.get("/api/v1/backups").json()["data"]}
        assert "elsewhere.sql" not in names
    finally:
        link.unlink()


def test_target_password_is_encrypted_and_never_returned(client: TestClient) -> None:
    password = "s3cr3t-Passw0rd-that-must-not-leak"
    response = client.post(
        "/api/v1/targets",
        json={"name": "replica", "host": "127.0.0.1", "port": 3307, "user": "restore", "password": password},
    )
    assert response.status_code == 201
    assert password not in response.text and response.json()["has_password"] is True
    assert password not in client.get("/api/v1/targets").text
    with session_scope() as session:
        stored = session.scalars(select(Target)).one().password_encrypted
        raw = session.execute(text("SELECT * FROM targets")).all()
    assert stored is not None and password.encode() not in stored
    assert password not in repr(raw)
    if get_engine().dialect.name == "sqlite":
        database_file = Path(get_settings().resolved_database_url.split("///", 1)[1])
        for candidate in (database_file, database_file.with_name(database_file.name + "-wal")):
            if candidate.exists():
                assert password.encode() not in candidate.read_bytes()
    duplicate = client.post("/api/v1/targets", json={"name": "replica", "user": "x"})
    assert duplicate.status_code == 409 and "already exists" in error_message(duplicate.json())


def test_target_check_reports_an_unreachable_server(client: TestClient) -> None:
    target = client.post(
        "/api/v1/targets", json={"name": "nowhere", "host": "127.0.0.1", "port": 1, "user": "restore", "password": "x"}
    ).json()
    check = client.post(f"/api/v1/targets/{target['id']}/check").json()
    assert check["ok"] is False
    assert "cannot reach a server at 127.0.0.1:1" in check["message"]
    assert "check the saved target's host, port or socket" in check["message"]


def test_health_reports_redis_and_no_worker(client: TestClient) -> None:
    health = client.get("/api/v1/health").json()
    assert health["database"] == "ok" and health["redis"] == "ok"
    assert health["workers"] == [] and health["status"] == "degraded"


def test_sweep_fails_jobs_whose_heartbeat_stopped(client: TestClient, dumps: dict[str, Path]) -> None:
    stale_id = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()["id"]
    fresh_id = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()["id"]
    now = utcnow()
    with session_scope() as session:
        for job_id, beat in ((stale_id, now - timedelta(seconds=31)), (fresh_id, now - timedelta(seconds=5))):
            job = session.get(Job, job_id)
            assert job is not None
            job.status, job.started_at, job.heartbeat_at, job.worker = JobStatus.RUNNING, beat, beat, "host:42"
    with session_scope() as session:
        assert fail_dead_jobs(session, heartbeat_timeout_s=30) == [stale_id]
    stale = client.get(f"/api/v1/jobs/{stale_id}").json()
    assert stale["status"] == "failed" and stale["finished_at"] is not None
    assert "the worker running this job (host:42) stopped sending heartbeats" in stale["error"]
    assert "retry the job" in stale["error"]
    assert client.get(f"/api/v1/jobs/{fresh_id}").json()["status"] == "running"
