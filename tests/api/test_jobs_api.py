"""The jobs API as a client sees it: what is accepted, what is refused and with which message."""

import json
from pathlib import Path

import redis
from fastapi.testclient import TestClient

from tests.api.conftest import error_fields, error_message


def _queued_messages(redis_url: str) -> list[dict[str, object]]:
    with redis.Redis.from_url(redis_url) as client:
        raw = client.lrange("celery", 0, -1)
    return [json.loads(item) for item in raw]


def test_create_restore_job_queues_the_job_id_only(
    client: TestClient, dumps: dict[str, Path], redis_server: str
) -> None:
    before = len(_queued_messages(redis_server))
    response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", "started_by": "dba"})
    assert response.status_code == 201, response.text
    job = response.json()
    assert job["status"] == "queued" and job["phase"] == "queued" and job["kind"] == "restore"
    assert job["backup_path"] == str(dumps["plain"].resolve())
    assert job["parameters"]["target"] == {
        "kind": "sandbox",
        "preset": "server-defaults",
        "options": {
            "innodb_buffer_pool_size": None,
            "innodb_log_file_size": None,
            "innodb_doublewrite": None,
            "innodb_flush_log_at_trx_commit": None,
            "innodb_autoinc_lock_mode": None,
            "aio_mode": None,
            "innodb_flush_method": None,
            "innodb_io_capacity": None,
            "log_bin": None,
            "performance_schema": None,
            "extra": {},
            "port": None,
        },
        "keep": False,
    }
    messages = _queued_messages(redis_server)
    assert len(messages) == before + 1
    headers = messages[0]["headers"]
    assert isinstance(headers, dict)
    assert headers["task"] == "restore.run"
    assert headers["argsrepr"] == f"[{job['id']}]"


def test_preset_and_explicit_options_merge(client: TestClient, dumps: dict[str, Path]) -> None:
    response = client.post(
        "/api/v1/jobs/restore",
        json={
            "backup_path": str(dumps["gzip"]),
            "target": {"kind": "sandbox", "preset": "fast-restore", "options": {"innodb_buffer_pool_size": "256M"}},
        },
    )
    assert response.status_code == 201, response.text
    options = response.json()["parameters"]["target"]["options"]
    assert options["innodb_buffer_pool_size"] == "256M"
    assert options["innodb_doublewrite"] is False and options["innodb_flush_log_at_trx_commit"] == 0


def test_path_outside_the_roots_is_refused(
    client: TestClient, dumps: dict[str, Path], backup_root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.sql"
    outside.write_text("-- MariaDB dump\n")
    (backup_root / "api" / "link.sql").symlink_to(outside)
    try:
        for raw in ("../../etc/passwd", "api/../../outside.sql", str(outside), "api/link.sql", "/etc/hosts"):
            response = client.post("/api/v1/jobs/restore", json={"backup_path": raw})
            assert response.status_code == 422, raw
            # The user sees that the path is outside the roots, and which roots are allowed.
            assert "is outside the backup roots" in error_message(response.json()), raw
            assert str(backup_root.resolve()) in error_message(response.json())
            assert error_fields(response.json()) == ["backup_path"]
    finally:
        (backup_root / "api" / "link.sql").unlink()


def test_missing_backup_is_refused(client: TestClient, dumps: dict[str, Path]) -> None:
    response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/nope.sql"})
    assert response.status_code == 422
    assert "api/nope.sql does not exist under the backup roots" in error_message(response.json())


def test_format_not_restorable_yet_is_refused(client: TestClient, dumps: dict[str, Path]) -> None:
    response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/mydumper-dir"})
    assert response.status_code == 422
    assert "is a mydumper backup; this version restores mysqldump files" in error_message(response.json())


def test_bad_options_are_reported_per_field(client: TestClient, dumps: dict[str, Path]) -> None:
    cases = [
        ({"kind": "sandbox", "preset": "warp-speed"}, "target.preset", "unknown preset 'warp-speed'"),
        (
            {"kind": "sandbox", "options": {"innodb_buffer_pool_size": "lots"}},
            "target.sandbox.options.innodb_buffer_pool_size",
            "String should match pattern",
        ),
        (
            {"kind": "sandbox", "options": {"extra": {"Bad Name": "1"}}},
            "target.sandbox.options.extra",
            "'Bad Name' is not a server option name",
        ),
        ({"kind": "sandbox", "options": {"port": 80}}, "target.sandbox.options.port", "greater than or equal to 1024"),
        ({"kind": "saved", "target_id": 999}, "target.target_id", "no saved target with id 999"),
    ]
    for target, field, message in cases:
        response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", "target": target})
        assert response.status_code == 422, target
        assert field in error_fields(response.json()), (target, response.json())
        assert message in error_message(response.json()), (target, response.json())


def test_saved_target_needs_a_database_when_the_dump_names_none(client: TestClient, dumps: dict[str, Path]) -> None:
    target = client.post("/api/v1/targets", json={"name": "prod-replica", "user": "restore", "password": "pw"}).json()
    response = client.post(
        "/api/v1/jobs/restore",
        json={"backup_path": "api/nodb.sql", "target": {"kind": "saved", "target_id": target["id"]}},
    )
    assert response.status_code == 422
    assert error_fields(response.json()) == ["database"]
    assert "name the database to restore into" in error_message(response.json())
    ok = client.post(
        "/api/v1/jobs/restore",
        json={
            "backup_path": "api/nodb.sql",
            "database": "shop_copy",
            "target": {"kind": "saved", "target_id": target["id"]},
        },
    )
    assert ok.status_code == 201, ok.text
    assert ok.json()["target_id"] == target["id"]


def test_list_filter_and_page(client: TestClient, dumps: dict[str, Path]) -> None:
    ids = [
        client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", "started_by": who}).json()["id"]
        for who in ("ann", "bob", "ann")
    ]
    client.post(f"/api/v1/jobs/{ids[1]}/cancel")
    everything = client.get("/api/v1/jobs").json()
    assert everything["count"] == 3 and [j["id"] for j in everything["data"]] == ids[::-1]
    assert [j["id"] for j in client.get("/api/v1/jobs", params={"started_by": "ann"}).json()["data"]] == [
        ids[2],
        ids[0],
    ]
    assert [j["id"] for j in client.get("/api/v1/jobs", params={"status": "cancelled"}).json()["data"]] == [ids[1]]
    page = client.get("/api/v1/jobs", params={"limit": 1, "offset": 1}).json()
    assert page["count"] == 3 and [j["id"] for j in page["data"]] == [ids[1]]
    assert client.get("/api/v1/jobs", params={"limit": 0}).status_code == 422


def test_cancel_and_retry(client: TestClient, dumps: dict[str, Path]) -> None:
    job = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()
    conflict = client.post(f"/api/v1/jobs/{job['id']}/retry")
    assert conflict.status_code == 409
    assert "cancel it or wait for it to end before retrying" in error_message(conflict.json())

    cancelled = client.post(f"/api/v1/jobs/{job['id']}/cancel").json()
    assert cancelled["status"] == "cancelled" and cancelled["cancel_requested"] is True
    again = client.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert again.status_code == 409 and "already ended (cancelled)" in error_message(again.json())

    retry = client.post(f"/api/v1/jobs/{job['id']}/retry")
    assert retry.status_code == 201
    assert retry.json()["parent_id"] == job["id"] and retry.json()["status"] == "queued"
    assert retry.json()["parameters"] == cancelled["parameters"]

    logs = client.get(f"/api/v1/jobs/{job['id']}/logs").json()
    assert [line["message"] for line in logs["data"]][-1] == "cancelled before it started"
    assert client.get("/api/v1/jobs/999999").status_code == 404


def test_events_stream_ends_for_a_finished_job(client: TestClient, dumps: dict[str, Path]) -> None:
    job = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()
    client.post(f"/api/v1/jobs/{job['id']}/cancel")
    with client.stream("GET", f"/api/v1/jobs/{job['id']}/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    events = [line.removeprefix("event: ").strip() for line in body.splitlines() if line.startswith("event:")]
    assert events[:2] == ["log", "log"] and "job" in events and events[-1] == "end"
    assert '"status":"cancelled"' in body


def test_openapi_and_presets(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert "jobs-create_restore_job" in json.dumps(schema)
    assert client.get("/docs").status_code == 200
    presets = {p["name"]: p for p in client.get("/api/v1/sandbox-presets").json()}
    assert presets["fast-restore"]["options"]["innodb_doublewrite"] is False
    assert presets["server-defaults"]["options"]["innodb_doublewrite"] is None
