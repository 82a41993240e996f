"""Protected databases and drills through the API: what is accepted, what is refused and with which message."""

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from app.core.config import get_settings
from app.core.db import get_engine, session_scope
from app.models import ProtectedDatabase, Role
from tests.api.conftest import DUMP_HEAD, error_fields, error_message

SHOP = {"name": "shop (production)", "database": "shop", "rto_s": 600, "backup_glob": "protected/*"}


@pytest.fixture
def protected_dumps(backup_root: Path) -> Iterator[Path]:
    """A folder of this module's own, so other tests' dumps under the shared root are not this database's."""
    folder = backup_root / "protected"
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    shutil.rmtree(folder)


def create(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/api/v1/protected-databases", json={**SHOP, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_protected_database_is_saved_with_its_schedule_in_words(client: TestClient) -> None:
    body = create(
        client,
        drill_schedule=" 0  2 * * * ",
        drill_timezone="Europe/Paris",
        webhook_url="https://hooks.example.com/services/T000/B000/XXXXTOKEN",
        email_to=["dba@example.com", "dba@example.com", "manager@example.com"],
    )
    assert body["drill_schedule"] == "0 2 * * *" and body["drill_timezone"] == "Europe/Paris"
    assert body["status"]["schedule_text"] == "At 02:00 every day (Europe/Paris)"
    assert body["status"]["next_drill_at"] is not None and body["status"]["overdue_since"] is None
    # Chat services put their token in the webhook's path: the API shows the host only.
    assert body["webhook"] == "https://hooks.example.com/…" and "XXXXTOKEN" not in json.dumps(body)
    assert body["email_to"] == ["dba@example.com", "manager@example.com"]
    assert body["status"]["backups"] == 0 and body["status"]["latest_backup"] is None
    assert body["status"]["rto_state"] == "unknown" and body["status"]["estimate"] is None
    listed = client.get("/api/v1/protected-databases").json()
    assert [p["name"] for p in listed["data"]] == ["shop (production)"] and listed["smtp_configured"] is False


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"drill_schedule": "0 2 * *"}, "drill_schedule", "has 4 fields; a schedule has five"),
        ({"drill_schedule": "0 25 * * *"}, "drill_schedule", "is not a valid schedule: Bad hour"),
        ({"drill_timezone": "Europe/Atlantis"}, "drill_timezone", "unknown time zone 'Europe/Atlantis'"),
        ({"webhook_url": "ftp://example.com/hook"}, "webhook_url", "should be an http:// or https:// address"),
        ({"webhook_url": "https://"}, "webhook_url", "should be an http:// or https:// address"),
        ({"email_to": ["not an address"]}, "email_to.0", "String should match pattern"),
        ({"rto_s": 0}, "rto_s", "greater than or equal to 1"),
        ({"drill_grace_s": 5}, "drill_grace_s", "greater than or equal to 60"),
        ({"database": "a.b"}, "database", "String should match pattern"),
        ({"drill_preset": "turbo"}, "drill_preset", "unknown preset 'turbo'; choose one of: server-defaults"),
        ({"source_target_id": 999999}, "source_target_id", "no saved target with id 999999"),
    ],
)
def test_bad_settings_are_refused_next_to_their_field(
    client: TestClient, fields: dict[str, Any], field: str, message: str
) -> None:
    response = client.post("/api/v1/protected-databases", json={**SHOP, **fields})
    assert response.status_code == 422, response.text
    assert error_fields(response.json()) == [field]
    assert message in error_message(response.json())
    # Nothing was saved.
    assert client.get("/api/v1/protected-databases").json()["data"] == []


def test_names_are_unique(client: TestClient) -> None:
    create(client)
    again = client.post("/api/v1/protected-databases", json=SHOP)
    assert again.status_code == 409 and "already exists" in error_message(again.json())


def test_webhook_secret_is_encrypted_never_returned_and_can_be_removed(client: TestClient) -> None:
    secret = "whsec-that-must-never-leak-0123456789"
    body = create(client, webhook_url="https://hooks.example.com/x", webhook_secret=secret)
    assert body["has_webhook_secret"] is True and secret not in json.dumps(body)
    with session_scope() as session:
        raw = session.execute(text("SELECT * FROM protected_databases")).all()
    assert secret not in repr(raw)
    if get_engine().dialect.name == "sqlite":
        database_file = Path(get_settings().resolved_database_url.split("///", 1)[1])
        for candidate in (database_file, database_file.with_name(database_file.name + "-wal")):
            if candidate.exists():
                assert secret.encode() not in candidate.read_bytes()
    # Sending other fields leaves the secret alone; null removes it.
    kept = client.patch(f"/api/v1/protected-databases/{body['id']}", json={"rto_s": 60}).json()
    assert kept["has_webhook_secret"] is True and kept["rto_s"] == 60
    removed = client.patch(f"/api/v1/protected-databases/{body['id']}", json={"webhook_secret": None}).json()
    assert removed["has_webhook_secret"] is False


def test_a_new_schedule_counts_from_now(client: TestClient) -> None:
    body = create(client, drill_schedule="0 2 * * *")
    with session_scope() as session:
        before = session.scalars(select(ProtectedDatabase)).one().schedule_since
    unchanged = client.patch(f"/api/v1/protected-databases/{body['id']}", json={"rto_s": 120})
    assert unchanged.status_code == 200
    moved = client.patch(f"/api/v1/protected-databases/{body['id']}", json={"drill_schedule": "30 3 * * 1"})
    assert moved.status_code == 200 and moved.json()["drill_schedule"] == "30 3 * * 1"
    with session_scope() as session:
        after = session.scalars(select(ProtectedDatabase)).one().schedule_since
    assert after > before
    cleared = client.patch(f"/api/v1/protected-databases/{body['id']}", json={"drill_schedule": ""}).json()
    assert cleared["drill_schedule"] is None and cleared["status"]["next_drill_at"] is None
    emptied = client.patch(f"/api/v1/protected-databases/{body['id']}", json={"rto_s": None})
    assert emptied.status_code == 422 and "rto_s cannot be emptied" in error_message(emptied.json())


def test_unknown_ids_get_404(client: TestClient) -> None:
    for method, path in (
        ("GET", "/api/v1/protected-databases/424242"),
        ("PATCH", "/api/v1/protected-databases/424242"),
        ("DELETE", "/api/v1/protected-databases/424242"),
        ("POST", "/api/v1/protected-databases/424242/drills"),
        ("POST", "/api/v1/protected-databases/424242/notifications/test"),
        ("GET", "/api/v1/drills?protected_database_id=424242"),
    ):
        response = client.request(method, path, json={} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path, response.text)
        assert "no protected database with id 424242" in error_message(response.json())


def _queued_messages(redis_url: str) -> list[dict[str, Any]]:
    with redis.Redis.from_url(redis_url) as client:
        return [json.loads(item) for item in client.lrange("celery", 0, -1)]


def test_a_drill_restores_the_latest_backup_into_a_sandbox_one_at_a_time(
    client: TestClient, protected_dumps: Path, redis_server: str
) -> None:
    older, newer = protected_dumps / "shop-monday.sql", protected_dumps / "shop-tuesday.sql"
    older.write_bytes(DUMP_HEAD)
    newer.write_bytes(DUMP_HEAD)
    os.utime(older, (1_700_000_000, 1_700_000_000))
    body = create(client, drill_preset="fast-restore")

    response = client.post(f"/api/v1/protected-databases/{body['id']}/drills")
    assert response.status_code == 201, response.text
    drill = response.json()
    assert drill["status"] == "queued" and drill["trigger"] == "manual" and drill["error"] is None
    assert drill["backup_path"] == str(newer.resolve())
    job = client.get(f"/api/v1/jobs/{drill['job_id']}").json()
    assert job["parameters"]["drill"] == {"protected_database_id": body["id"], "name": "shop (production)"}
    assert job["parameters"]["target"]["preset"] == "fast-restore" and job["parameters"]["verify"] is True
    assert job["parameters"]["capture"] == "none" and job["started_by"] == "test-admin"
    assert _queued_messages(redis_server)[0]["headers"]["argsrepr"] == f"[{drill['job_id']}]"

    # A second drill while the first is queued is refused, saying which job holds it.
    again = client.post(f"/api/v1/protected-databases/{body['id']}/drills")
    assert again.status_code == 409
    assert f"already queued or running (job {drill['job_id']})" in error_message(again.json())

    state = client.get(f"/api/v1/protected-databases/{body['id']}").json()["status"]
    assert state["active_drill_job_id"] == drill["job_id"] and state["last_drill"]["id"] == drill["id"]
    assert state["backups"] == 2 and state["latest_backup"]["path"] == str(newer.resolve())
    listed = client.get("/api/v1/drills", params={"protected_database_id": body["id"]}).json()
    assert listed["count"] == 1 and listed["data"][0]["job_id"] == drill["job_id"]


def test_a_drill_whose_latest_backup_vanished_fails_with_that_reason(client: TestClient, protected_dumps: Path) -> None:
    dump = protected_dumps / "shop.sql"
    dump.write_bytes(DUMP_HEAD)
    body = create(client)
    assert client.get(f"/api/v1/protected-databases/{body['id']}").json()["status"]["latest_backup"] is None
    client.get("/api/v1/backups")  # the backup is listed (scanned) once
    dump.unlink()

    drill = client.post(f"/api/v1/protected-databases/{body['id']}/drills").json()
    assert drill["status"] == "failed" and drill["job_id"] is None
    assert drill["error"].startswith(f"the latest backup of shop (production), {dump.resolve()} (modified ")
    assert "is no longer on disk: it was deleted or moved. Nothing was restored" in drill["error"]
    # The failure is in the trends, on today's square.
    trend = client.get("/api/v1/trends").json()["databases"][0]
    assert trend["days"][-1]["state"] == "failed" and trend["runs"][-1]["error"] == drill["error"]


def test_a_drill_without_any_backup_says_how_backups_were_looked_for(client: TestClient) -> None:
    body = create(client, backup_glob="nowhere/*")
    drill = client.post(f"/api/v1/protected-databases/{body['id']}/drills").json()
    assert drill["status"] == "failed"
    assert drill["error"] == (
        "no backup of shop (production) found under the backup roots (none that holds the database `shop` and "
        "matches nowhere/*): nothing to restore. Back it up, or correct the database name, pattern or source server"
    )


def test_deleting_a_protected_database_keeps_its_drills_jobs(client: TestClient, protected_dumps: Path) -> None:
    (protected_dumps / "shop.sql").write_bytes(DUMP_HEAD)
    body = create(client)
    drill = client.post(f"/api/v1/protected-databases/{body['id']}/drills").json()
    assert client.delete(f"/api/v1/protected-databases/{body['id']}").status_code == 204
    assert client.get(f"/api/v1/jobs/{drill['job_id']}").status_code == 200
    assert client.get("/api/v1/drills").json()["count"] == 0


# Who may do what on this module's routes: viewers read, operators (and admins) change and start drills.
READS = [
    ("GET", "/api/v1/protected-databases"),
    ("GET", "/api/v1/protected-databases/{id}"),
    ("GET", "/api/v1/drills"),
    ("GET", "/api/v1/trends"),
    ("GET", "/api/v1/trends/runs.csv"),
    ("GET", "/api/v1/notifications"),
]
CHANGES = [
    ("POST", "/api/v1/protected-databases"),
    ("PATCH", "/api/v1/protected-databases/{id}"),
    ("POST", "/api/v1/protected-databases/{id}/drills"),
    ("POST", "/api/v1/protected-databases/{id}/notifications/test"),
    ("DELETE", "/api/v1/protected-databases/{id}"),
]


def test_viewers_read_operators_change(
    client: TestClient, client_as: Callable[[Role], TestClient], anonymous_client: TestClient
) -> None:
    protected = create(client)
    viewer, operator = client_as(Role.VIEWER), client_as(Role.OPERATOR)
    for method, path in READS + CHANGES:
        url = path.format(id=protected["id"])
        assert anonymous_client.request(method, url).status_code == 401, (method, path)
    for method, path in READS:
        url = path.format(id=protected["id"])
        assert viewer.request(method, url).status_code == 200, (method, path)
    for method, path in CHANGES:
        response = viewer.request(method, path.format(id=protected["id"]), json={**SHOP, "name": "other"})
        assert response.status_code == 403, (method, path)
        assert "this needs the operator role and test-viewer is viewer" in response.json()["detail"]
    # An operator gets past the role check (the answers are the routes' own: made, refused for its content...).
    bodies = {"POST": {**SHOP, "name": "by operator"}, "PATCH": {"rto_s": 120}}
    answers = [
        operator.request(method, path.format(id=protected["id"]), json=bodies.get(method)).status_code
        for method, path in CHANGES
    ]
    assert answers == [201, 200, 201, 422, 204]


def test_changes_are_on_record_without_secrets(client: TestClient, protected_dumps: Path) -> None:
    (protected_dumps / "shop.sql").write_bytes(DUMP_HEAD)
    secret, token = "whsec-audit-never-0123456789", "TOKEN-IN-PATH-42"
    protected = create(client, webhook_url=f"https://hooks.example.com/{token}", webhook_secret=secret)
    client.patch(
        f"/api/v1/protected-databases/{protected['id']}",
        json={"rto_s": 60, "drill_schedule": "0 3 * * *", "webhook_secret": "another-secret-value"},
    )
    client.patch(f"/api/v1/protected-databases/{protected['id']}", json={"rto_s": 60})  # no change: no record
    drill = client.post(f"/api/v1/protected-databases/{protected['id']}/drills").json()
    client.delete(f"/api/v1/protected-databases/{protected['id']}")

    events = client.get("/api/v1/audit", params={"object_type": "protected_database"}).json()["data"]
    assert [(e["action"], e["username"]) for e in reversed(events)] == [
        ("protected_database.create", "test-admin"),
        ("protected_database.update", "test-admin"),
        ("drill.start", "test-admin"),
        ("protected_database.delete", "test-admin"),
    ]
    created, updated, started, deleted = (e["detail"] for e in reversed(events))
    assert created.startswith("shop (production): name 'shop (production)'; database 'shop'")
    assert "webhook_url set" in created and "webhook_secret set" in created
    assert updated == ("shop (production): rto_s 600 -> 60; drill_schedule None -> '0 3 * * *'; webhook_secret set")
    assert started == f"manual drill {drill['id']} of shop (production): job {drill['job_id']}"
    assert deleted == "shop (production) (database shop)"
    everything = json.dumps(client.get("/api/v1/audit", params={"limit": 500}).json())
    assert secret not in everything and token not in everything and "another-secret-value" not in everything
    # The drill's restore job is on record too, as launched by the same user.
    restore = client.get("/api/v1/audit", params={"action": "job.restore"}).json()["data"]
    assert [(e["object_id"], e["username"]) for e in restore] == [(str(drill["job_id"]), "test-admin")]
