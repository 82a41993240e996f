"""The audit log: who logged in (or failed to), launched, cancelled, retried, imported, and changed saved servers
and users, with the object and a short detail; written with the change, and only when the change is made."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.core.db import session_scope
from app.models import AuditEvent, Role, Target, User
from app.targets.schemas import TargetCreate
from app.targets.service import create_target
from tests.auth import ROLE_USERS, TEST_PASSWORD

FIXTURES = Path(__file__).resolve().parents[2] / "e2e" / "fixtures"


def _events(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    response = client.get("/api/v1/audit", params=params)
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def _summary(events: list[dict[str, Any]]) -> list[tuple[str | None, str, str | None, str | None]]:
    """Oldest first: (who, action, object, detail)."""
    return [
        (e["username"], e["action"], f"{e['object_type']} {e['object_id']}" if e["object_type"] else None, e["detail"])
        for e in reversed(events)
    ]


def test_logins_failed_logins_logouts_and_password_changes(client: TestClient, anonymous_client: TestClient) -> None:
    viewer = ROLE_USERS[Role.VIEWER]
    anonymous_client.post("/api/v1/auth/login", json={"username": "mallory", "password": "guess-1"})
    anonymous_client.post("/api/v1/auth/login", json={"username": viewer, "password": "guess-2"})
    ok = anonymous_client.post(
        "/api/v1/auth/login",
        json={"username": viewer, "password": TEST_PASSWORD},
        headers={"User-Agent": "curl/8.5.0"},
    )
    assert ok.status_code == 200
    anonymous_client.post(
        "/api/v1/auth/password", json={"current_password": TEST_PASSWORD, "new_password": "viewer-password-2"}
    )
    anonymous_client.post(
        "/api/v1/auth/password", json={"current_password": "viewer-password-2", "new_password": TEST_PASSWORD}
    )
    anonymous_client.post("/api/v1/auth/logout")

    events = _events(client, action=["auth.login", "auth.login_failed", "auth.logout", "auth.password_changed"])
    viewer_id = next(u["id"] for u in client.get("/api/v1/users").json()["data"] if u["username"] == viewer)
    assert _summary(events) == [
        ("mallory", "auth.login_failed", None, "no such user"),
        (viewer, "auth.login_failed", None, "wrong password"),
        (viewer, "auth.login", None, "with curl/8.5.0"),
        (viewer, "auth.password_changed", f"user {viewer_id}", None),
        (viewer, "auth.password_changed", f"user {viewer_id}", None),
        (viewer, "auth.logout", None, None),
    ]
    # Logins carry the client's address (the test client's is "testclient").
    assert {e["client"] for e in events if e["action"].startswith("auth.log")} == {"testclient"}
    assert all("guess" not in str(e) and TEST_PASSWORD not in str(e) for e in events)


def test_jobs_launched_cancelled_retried_and_imported(
    client_as: Callable[[Role], TestClient], client: TestClient, dumps: dict[str, Path]
) -> None:
    operator = client_as(Role.OPERATOR)
    job = operator.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()
    operator.post(f"/api/v1/jobs/{job['id']}/cancel")
    retry = client.post(f"/api/v1/jobs/{job['id']}/retry").json()
    with (FIXTURES / "strace-mariadbd.log").open("rb") as log:
        imported = operator.post("/api/v1/traces/import", files={"file": ("mariadbd.strace", log)}).json()
    size = (FIXTURES / "strace-mariadbd.log").stat().st_size

    name = ROLE_USERS[Role.OPERATOR]
    assert _summary(_events(client, object_type="job")) == [
        (
            name,
            "job.restore",
            f"job {job['id']}",
            f"restore {dumps['plain'].resolve()} into a sandbox (server-defaults) with loader",
        ),
        (name, "job.cancel", f"job {job['id']}", "restore job, queued"),
        ("test-admin", "job.retry", f"job {retry['id']}", f"retry of restore job {job['id']}"),
        (
            name,
            "trace.import",
            f"job {imported['job_id']}",
            f"mariadbd.strace (strace, {size} bytes, {imported['operations']} operations)",
        ),
    ]
    assert retry["started_by"] == "test-admin"  # who retried, not who launched the first run


def test_saved_servers_and_users_created_changed_and_deleted(client: TestClient) -> None:
    target = client.post(
        "/api/v1/targets", json={"name": "replica", "host": "db2", "port": 3307, "user": "restore", "password": "x1"}
    ).json()
    client.patch(f"/api/v1/targets/{target['id']}", json={"port": 3308, "password": "x2", "notes": "the new replica"})
    client.patch(f"/api/v1/targets/{target['id']}", json={"port": 3308, "password": "x2"})  # no change: no event
    client.delete(f"/api/v1/targets/{target['id']}")
    user = client.post("/api/v1/users", json={"username": "erin", "role": "viewer"}).json()["user"]
    client.patch(f"/api/v1/users/{user['id']}", json={"role": "operator", "disabled": True})
    client.patch(f"/api/v1/users/{user['id']}", json={"role": "operator"})  # no change: nothing to record
    client.post(f"/api/v1/users/{user['id']}/password", json={})
    client.delete(f"/api/v1/users/{user['id']}")

    events = _events(client, username="test-admin")
    assert _summary(events) == [
        ("test-admin", "target.create", f"target {target['id']}", "replica: restore@db2:3307, with a password"),
        (
            "test-admin",
            "target.update",
            f"target {target['id']}",
            "replica: port 3307 -> 3308, password replaced, notes changed",
        ),
        ("test-admin", "target.delete", f"target {target['id']}", "replica: restore@db2:3308"),
        ("test-admin", "user.create", f"user {user['id']}", "erin as viewer"),
        ("test-admin", "user.update", f"user {user['id']}", "erin: role viewer -> operator, disabled"),
        ("test-admin", "user.password_reset", f"user {user['id']}", "erin (one-time password)"),
        ("test-admin", "user.delete", f"user {user['id']}", "erin (operator)"),
    ]


def test_a_refused_request_leaves_no_record(client: TestClient, dumps: dict[str, Path]) -> None:
    assert client.post("/api/v1/jobs/restore", json={"backup_path": "api/missing.sql"}).status_code == 422
    job = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()
    client.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert client.post(f"/api/v1/jobs/{job['id']}/cancel").status_code == 409
    assert client.post("/api/v1/users", json={"username": "test-viewer", "role": "viewer"}).status_code == 409
    assert [e["action"] for e in _events(client)] == ["job.cancel", "job.restore"]


def test_the_record_is_part_of_the_change_s_unit_of_work() -> None:
    """A change that is rolled back takes its audit event with it, and the other way round."""
    from app.core.db import session_scope as unit_of_work

    with unit_of_work() as session:
        admin = session.scalar(select(User).where(User.username == ROLE_USERS[Role.ADMIN]))
        assert admin is not None
    with pytest.raises(RuntimeError), unit_of_work() as session:
        create_target(session, TargetCreate(name="half-done", user="restore"), admin)
        assert session.scalar(select(func.count()).select_from(AuditEvent)) == 1
        raise RuntimeError("the request failed after the service returned")
    with session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Target)) == 0
        assert session.scalar(select(func.count()).select_from(AuditEvent)) == 0


def test_filters_and_pages(client: TestClient, anonymous_client: TestClient) -> None:
    for attempt in range(5):
        anonymous_client.post("/api/v1/auth/login", json={"username": f"nobody{attempt}", "password": "x"})
    everything = client.get("/api/v1/audit").json()
    assert everything["count"] == 5 and "job.cancel" in everything["actions"]
    assert [e["username"] for e in everything["data"]] == [f"nobody{n}" for n in (4, 3, 2, 1, 0)]
    page = client.get("/api/v1/audit", params={"limit": 2, "offset": 1}).json()
    assert page["count"] == 5 and [e["username"] for e in page["data"]] == ["nobody3", "nobody2"]
    assert _events(client, username="nobody2")[0]["detail"] == "no such user"
    assert _events(client, action="job.restore") == []
    assert client.get("/api/v1/audit", params={"limit": 501}).status_code == 422


def test_a_backup_launch(client_as: Callable[[Role], TestClient], client: TestClient, backup_root: Path) -> None:
    target = client.post("/api/v1/targets", json={"name": "primary", "user": "backup"}).json()
    operator = client_as(Role.OPERATOR)
    response = operator.post(
        "/api/v1/jobs/backup",
        json={"source": {"kind": "saved", "target_id": target["id"]}, "databases": ["shop"], "destination": "au/one"},
    )
    assert response.status_code == 201, response.text
    assert _summary(_events(client, action="job.backup")) == [
        (
            ROLE_USERS[Role.OPERATOR],
            "job.backup",
            f"job {response.json()['id']}",
            f"back up shop of saved target 'primary' ({target['id']}) with mysqldump into "
            f"{(backup_root / 'au' / 'one').resolve()}",
        )
    ]
