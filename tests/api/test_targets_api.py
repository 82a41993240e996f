"""Saved servers through the API: edits (only the fields sent, the same rules as a new one), the write-only password,
the audit events of each change, the last check, and what a delete does to the jobs that used the server. (Who may
call what: test_route_roles.py; a real server edited and checked: tests/integration/test_saved_servers.py.)"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.core.db import session_scope
from app.core.security import decrypt_secret
from app.models import Role, Target
from tests.api.conftest import error_fields, error_message

PASSWORD = "first-s3cret pass"
NEW_PASSWORD = "second-s3cret pass"


def _create(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(
        "/api/v1/targets", json={"name": "replica", "host": "db2", "port": 3307, "user": "restore", **body}
    )
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _listed(client: TestClient, target_id: int) -> dict[str, Any]:
    listed: dict[str, Any] = next(t for t in client.get("/api/v1/targets").json()["data"] if t["id"] == target_id)
    return listed


def _stored_password(target_id: int) -> str | None:
    with session_scope() as session:
        blob = session.scalar(select(Target.password_encrypted).where(Target.id == target_id))
    return None if blob is None else decrypt_secret(blob)


def _target_events(client: TestClient) -> list[tuple[str, str]]:
    events = client.get("/api/v1/audit", params={"object_type": "target"}).json()["data"]
    return [(e["action"], e["detail"]) for e in reversed(events)]


def test_an_edit_changes_only_the_fields_sent_and_the_audit_names_each(client: TestClient) -> None:
    target = _create(client, password=PASSWORD, notes="nightly source")
    assert target["updated_at"] is None and target["default_database"] is None

    response = client.patch(
        f"/api/v1/targets/{target['id']}",
        json={"name": "replica-b", "socket": "/run/mysqld/mysqld.sock", "default_database": "shop", "user": "dba"},
    )
    assert response.status_code == 200, response.text
    edited = response.json()
    assert {k: edited[k] for k in ("name", "host", "port", "socket", "user", "default_database", "notes")} == {
        "name": "replica-b",
        "host": "db2",  # left out: kept
        "port": 3307,
        "socket": "/run/mysqld/mysqld.sock",
        "user": "dba",
        "default_database": "shop",
        "notes": "nightly source",
    }
    assert edited["updated_at"] is not None and edited["has_password"] is True
    assert _listed(client, target["id"]) == edited

    # null clears the optional fields; a form's empty string does too.
    cleared = client.patch(
        f"/api/v1/targets/{target['id']}", json={"socket": None, "default_database": "", "notes": None}
    )
    assert (cleared.json()["socket"], cleared.json()["default_database"], cleared.json()["notes"]) == (None, None, None)

    assert _target_events(client) == [
        ("target.create", "replica: restore@db2:3307, with a password"),
        (
            "target.update",
            "replica-b: name 'replica' -> 'replica-b', socket none -> /run/mysqld/mysqld.sock, user restore -> dba, "
            "default database none -> shop",
        ),
        (
            "target.update",
            "replica-b: socket /run/mysqld/mysqld.sock -> none, default database shop -> none, notes removed",
        ),
    ]


def test_an_edit_that_changes_nothing_is_not_recorded(client: TestClient) -> None:
    target = _create(client, password=PASSWORD)
    same = client.patch(f"/api/v1/targets/{target['id']}", json={"port": 3307, "password": PASSWORD, "notes": None})
    assert same.status_code == 200 and same.json()["updated_at"] is None
    assert client.patch(f"/api/v1/targets/{target['id']}", json={}).status_code == 200
    assert [action for action, _ in _target_events(client)] == ["target.create"]


def test_the_password_is_kept_when_left_out_replaced_when_sent_and_never_returned(
    client_as: Callable[[Role], TestClient],
) -> None:
    admin, viewer = client_as(Role.ADMIN), client_as(Role.VIEWER)
    target = _create(admin, password=PASSWORD)
    answers = [admin.patch(f"/api/v1/targets/{target['id']}", json={"port": 3308}).text]
    assert _stored_password(target["id"]) == PASSWORD  # the form's empty password field: left out, kept

    replaced = admin.patch(f"/api/v1/targets/{target['id']}", json={"password": NEW_PASSWORD})
    answers.append(replaced.text)
    assert replaced.json()["has_password"] is True and _stored_password(target["id"]) == NEW_PASSWORD

    removed = admin.patch(f"/api/v1/targets/{target['id']}", json={"password": None})
    answers.append(removed.text)
    assert removed.json()["has_password"] is False and _stored_password(target["id"]) is None

    answers += [admin.get("/api/v1/targets").text, viewer.get("/api/v1/targets").text]
    answers += [str(e) for e in admin.get("/api/v1/audit").json()["data"]]
    for answer in answers:
        assert PASSWORD not in answer and NEW_PASSWORD not in answer
    assert "password" not in {key for key in _listed(viewer, target["id"]) if key != "has_password"}
    assert [detail for _, detail in _target_events(admin)][1:] == [
        "replica: port 3307 -> 3308",
        "replica: password replaced",
        "replica: password removed",
    ]
    # A viewer reads, an operator checks; neither edits (every role on every route: test_route_roles.py).
    assert viewer.patch(f"/api/v1/targets/{target['id']}", json={"port": 1}).status_code == 403
    assert client_as(Role.OPERATOR).patch(f"/api/v1/targets/{target['id']}", json={"port": 1}).status_code == 403
    assert _listed(admin, target["id"])["port"] == 3308


BAD_FIELDS = [
    ({"name": "  "}, "name", "String should have at least 1 character"),
    ({"port": 0}, "port", "greater than or equal to 1"),
    ({"port": 70000}, "port", "less than or equal to 65535"),
    ({"host": "db 2"}, "host", "a host is a name or an address without spaces or slashes"),
    ({"host": "/run/mysqld/mysqld.sock"}, "host", "a socket path goes in socket"),
    ({"socket": "mysqld.sock"}, "socket", "a socket is an absolute path on the worker's host"),
    ({"socket": "/" + "s" * 107}, "socket", "a unix socket path longer than 107 bytes cannot be connected to"),
    ({"user": ""}, "user", "String should have at least 1 character"),
    ({"default_database": "shop.orders"}, "default_database", "String should match pattern"),
    ({"passwd": "x"}, "passwd", "Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("body", "field", "message"), BAD_FIELDS, ids=[b[1] for b in BAD_FIELDS])
def test_an_edit_is_checked_as_a_new_server_is_and_a_refused_one_changes_nothing(
    client: TestClient, body: dict[str, Any], field: str, message: str
) -> None:
    created = client.post("/api/v1/targets", json={"name": "bad", "user": "restore", **body})
    assert created.status_code == 422 and error_fields(created.json()) == [field]
    assert message in error_message(created.json())

    target = _create(client)
    edited = client.patch(f"/api/v1/targets/{target['id']}", json={"notes": "changed", **body})
    assert edited.status_code == 422, edited.text
    assert error_fields(edited.json()) == [field] and message in error_message(edited.json())
    assert _listed(client, target["id"])["notes"] is None
    assert [action for action, _ in _target_events(client)] == ["target.create"]


@pytest.mark.parametrize("field", ["name", "host", "port", "user"])
def test_an_edit_cannot_empty_a_needed_field(client: TestClient, field: str) -> None:
    target = _create(client)
    response = client.patch(f"/api/v1/targets/{target['id']}", json={field: None})
    assert response.status_code == 422 and error_fields(response.json()) == [field]
    assert "cannot be empty: leave the field out to keep it as it is" in error_message(response.json())


def test_a_rename_to_a_taken_name_is_refused_under_the_name(client: TestClient) -> None:
    _create(client)
    other = _create(client, name="staging")
    response = client.patch(f"/api/v1/targets/{other['id']}", json={"name": " replica "})
    assert response.status_code == 409 and error_fields(response.json()) == ["name"]
    assert error_message(response.json()) == "a target named 'replica' already exists; choose another name"
    assert client.patch("/api/v1/targets/999999", json={"port": 3306}).status_code == 404


def test_the_last_check_is_listed_and_an_edit_of_how_to_connect_clears_it(
    client_as: Callable[[Role], TestClient],
) -> None:
    admin, operator, viewer = (client_as(role) for role in (Role.ADMIN, Role.OPERATOR, Role.VIEWER))
    target = _create(admin, host="127.0.0.1", port=1, password=PASSWORD)
    check = operator.post(f"/api/v1/targets/{target['id']}/check").json()
    assert (check["ok"], check["problem"], check["server_version"]) == (False, "unreachable", None)
    assert check["message"].startswith("cannot reach a server at 127.0.0.1:1: nothing listens there")
    assert _listed(viewer, target["id"])["last_check"] == check

    admin.patch(f"/api/v1/targets/{target['id']}", json={"name": "renamed", "notes": "still the same server"})
    assert _listed(viewer, target["id"])["last_check"] == check
    admin.patch(f"/api/v1/targets/{target['id']}", json={"password": NEW_PASSWORD})
    assert _listed(viewer, target["id"])["last_check"] is None
    # A check is not a change: it is not in the audit log.
    assert [action for action, _ in _target_events(admin)] == ["target.create", "target.update", "target.update"]


def test_a_delete_is_refused_while_jobs_use_the_server_and_keeps_the_history_of_finished_ones(
    client: TestClient, dumps: dict[str, Path]
) -> None:
    target = _create(client, password=PASSWORD)
    into = client.post(
        "/api/v1/jobs/restore",
        json={"backup_path": "api/shop.sql", "target": {"kind": "saved", "target_id": target["id"]}},
    ).json()
    compared = client.post(
        "/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", "checksum_source_id": target["id"]}
    ).json()
    assert into["parameters"]["target"] == {"kind": "saved", "target_id": target["id"], "name": "replica"}
    listed = _listed(client, target["id"])
    assert (listed["job_count"], listed["active_job_ids"]) == (1, [into["id"], compared["id"]])

    refused = client.delete(f"/api/v1/targets/{target['id']}")
    assert refused.status_code == 409
    assert error_message(refused.json()) == (
        f"'replica' is in use: queued job {into['id']} restores into it; queued job {compared['id']} compares "
        "checksums with it. Cancel those jobs or wait until they end, then delete it"
    )
    assert _listed(client, target["id"])["name"] == "replica"

    for job in (into, compared):
        assert client.post(f"/api/v1/jobs/{job['id']}/cancel").status_code == 200
    assert client.delete(f"/api/v1/targets/{target['id']}").status_code == 204
    assert client.get("/api/v1/targets").json()["data"] == []

    # The finished job keeps its record and the server's name; only the link is gone, and it cannot be retried.
    kept = client.get(f"/api/v1/jobs/{into['id']}").json()
    assert kept["status"] == "cancelled" and kept["target_id"] is None
    assert kept["parameters"]["target"]["name"] == "replica"
    assert client.get(f"/api/v1/jobs/{into['id']}/logs").json()["data"]
    for job in (into, compared):
        retry = client.post(f"/api/v1/jobs/{job['id']}/retry")
        assert retry.status_code == 409
        assert "which has been deleted: launch a new job instead" in retry.json()["detail"][0]["msg"]
    assert _target_events(client)[-1] == (
        "target.delete",
        "replica: restore@db2:3307; 1 finished job(s) keep their record",
    )
    assert client.delete(f"/api/v1/targets/{target['id']}").status_code == 404
