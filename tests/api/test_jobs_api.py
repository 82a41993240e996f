"""The jobs API as a client sees it: what is accepted, what is refused and with which message."""

import bz2
import json
from collections.abc import Callable
from pathlib import Path

import redis
from fastapi.testclient import TestClient

from app.models import Role
from tests.api.conftest import error_fields, error_message


def _queued_messages(redis_url: str) -> list[dict[str, object]]:
    with redis.Redis.from_url(redis_url) as client:
        raw = client.lrange("celery", 0, -1)
    return [json.loads(item) for item in raw]


def test_create_restore_job_queues_the_job_id_only(
    client: TestClient, dumps: dict[str, Path], redis_server: str
) -> None:
    before = len(_queued_messages(redis_server))
    response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"})
    assert response.status_code == 201, response.text
    job = response.json()
    assert job["started_by"] == "test-admin"
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


def test_started_by_is_the_logged_in_user_and_cannot_be_set(client: TestClient, dumps: dict[str, Path]) -> None:
    response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", "started_by": "someone"})
    assert response.status_code == 422
    assert "started_by is the logged-in user and cannot be set" in error_message(response.json())


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


def test_unfinished_dump_is_refused(client: TestClient, dumps: dict[str, Path]) -> None:
    response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/mydumper-dir"})
    assert response.status_code == 422
    # The user sees why the backup cannot be restored, next to the backup picker.
    assert "cannot be restored: the metadata file has no 'Finished dump at' line" in error_message(response.json())
    assert error_fields(response.json()) == ["backup_path"]


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


def test_list_filter_and_page(client_as: Callable[[Role], TestClient], dumps: dict[str, Path]) -> None:
    client, operator = client_as(Role.ADMIN), client_as(Role.OPERATOR)
    ids = [
        who.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"}).json()["id"]
        for who in (operator, client, operator)
    ]
    client.post(f"/api/v1/jobs/{ids[1]}/cancel")
    everything = client.get("/api/v1/jobs").json()
    assert everything["count"] == 3 and [j["id"] for j in everything["data"]] == ids[::-1]
    assert [j["id"] for j in client.get("/api/v1/jobs", params={"started_by": "test-operator"}).json()["data"]] == [
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


def test_runner_threads_and_chunk_size_are_stored_with_the_job(client: TestClient, dumps: dict[str, Path]) -> None:
    default = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql"})
    assert default.status_code == 201, default.text
    # auto picks the parallel loader; threads left to the worker (its CPU count); 64 MiB chunks.
    parameters = default.json()["parameters"]
    assert (parameters["runner"], parameters["threads"], parameters["chunk_size"]) == ("loader", None, 64 << 20)

    chosen = client.post(
        "/api/v1/jobs/restore",
        json={"backup_path": "api/shop.sql.gz", "runner": "mysql", "threads": 8, "chunk_size": 1 << 20},
    )
    assert chosen.status_code == 201, chosen.text
    parameters = chosen.json()["parameters"]
    assert (parameters["runner"], parameters["threads"], parameters["chunk_size"]) == ("mysql", 8, 1 << 20)


def test_loader_constants_agree_with_the_api() -> None:
    from app.jobs import schemas
    from worker.runners import loader

    assert schemas.DEFAULT_CHUNK_SIZE == loader.DEFAULT_CHUNK_SIZE
    assert schemas.MIN_CHUNK_SIZE == loader.MIN_CHUNK_SIZE


def _tab_dump(folder: Path, name: str, suffix: str = "") -> Path:
    tab = folder / name
    tab.mkdir()
    (tab / "t.sql").write_text("CREATE TABLE t (id int);\n")
    (tab / f"t.txt{suffix}").write_bytes(b"1\n2\n")
    return tab


def _bzip2_mydumper(folder: Path) -> Path:
    """A mydumper 0.10 directory whose files went through pbzip2 (a restorescope backup can make one)."""
    dump = folder / "mydumper-bz2"
    dump.mkdir()
    (dump / "metadata").write_text("Started dump at: 2026-11-24 10:00:00\nFinished dump at: 2026-11-24 10:00:01\n")
    (dump / "shop-schema-create.sql.bz2").write_bytes(bz2.compress(b"CREATE DATABASE `shop`;\n"))
    (dump / "shop.t-schema.sql.bz2").write_bytes(bz2.compress(b"CREATE TABLE `t` (id int);\n"))
    (dump / "shop.t.00000.sql.bz2").write_bytes(bz2.compress(b"INSERT INTO `t` VALUES (1),(2);\n"))
    return dump


def test_a_runner_that_cannot_read_the_format_is_refused_next_to_the_runner(
    client: TestClient, dumps: dict[str, Path]
) -> None:
    tab = _tab_dump(dumps["plain"].parent, "tab-plain")
    gzipped = _tab_dump(dumps["plain"].parent, "tab-gzip", ".gz")
    bzipped = _bzip2_mydumper(dumps["plain"].parent)
    try:
        cases = [
            (
                "api/tab-plain",
                "mysql",
                "the mysql client reads only a mysqldump file (.sql, .sql.gz, .sql.zst, .sql.bz2), and this backup "
                "is a mysqldump --tab directory: choose restorescope's loader or mysqlimport (auto picks the loader)",
            ),
            (
                "api/shop.sql",
                "myloader",
                "myloader reads only a mydumper directory, and this backup is a mysqldump file",
            ),
            ("api/shop.sql", "mysqlimport", "mysqlimport reads only a mysqldump --tab directory"),
            ("api/tab-gzip", "mysqlimport", "this --tab dump is compressed (gzip): choose restorescope's loader"),
            ("api/mydumper-bz2", "myloader", "compressed with bzip2: choose restorescope's loader, which reads .bz2"),
        ]
        for path, runner, message in cases:
            response = client.post("/api/v1/jobs/restore", json={"backup_path": path, "runner": runner})
            assert response.status_code == 422, (path, runner, response.text)
            assert error_fields(response.json()) == ["runner"], response.json()
            assert message in error_message(response.json()), (path, runner)
        ok = client.post("/api/v1/jobs/restore", json={"backup_path": "api/tab-plain", "runner": "mysqlimport"})
        assert ok.status_code == 201, ok.text
        loader = client.post("/api/v1/jobs/restore", json={"backup_path": "api/mydumper-bz2", "runner": "loader"})
        assert loader.status_code == 201, loader.text
    finally:
        for folder in (tab, gzipped, bzipped):
            for child in folder.iterdir():
                child.unlink()
            folder.rmdir()


def test_threads_and_chunk_size_out_of_range_are_reported_per_field(client: TestClient, dumps: dict[str, Path]) -> None:
    cases: list[tuple[dict[str, object], str, str]] = [
        ({"threads": 0}, "threads", "greater than or equal to 1"),
        ({"threads": 65}, "threads", "less than or equal to 64"),
        ({"chunk_size": 1000}, "chunk_size", "greater than or equal to 65536"),
        ({"chunk_size": 2 << 30}, "chunk_size", "less than or equal to 1073741824"),
        ({"runner": "pigz"}, "runner", "Input should be 'auto', 'loader', 'mysql', 'myloader', 'mysqlimport', "),
    ]
    for body, field, message in cases:
        response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", **body})
        assert response.status_code == 422, body
        assert error_fields(response.json()) == [field], response.json()
        assert message in error_message(response.json()), response.json()


def _physical_backup(folder: Path, backup_type: str = "full-backuped", name: str | None = None) -> Path:
    """What detection reads of a mariabackup directory: its checkpoints file and aria_log_control."""
    backup = folder / (name or f"physical-{backup_type}")
    backup.mkdir(exist_ok=True)
    (backup / "xtrabackup_checkpoints").write_text(
        f"backup_type = {backup_type}\nfrom_lsn = 0\nto_lsn = 100\nlast_lsn = 200\n"
    )
    (backup / "aria_log_control").write_bytes(b"\0" * 52)
    (backup / "ibdata1").write_bytes(b"\0" * 4096)
    return backup


def _remove(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def test_a_physical_backup_is_restored_by_mariabackup_with_its_prepare_settings(
    client: TestClient, dumps: dict[str, Path]
) -> None:
    backup = _physical_backup(dumps["plain"].parent)
    try:
        listed = client.get("/api/v1/backups").json()
        entry = next(b for b in listed["data"] if b["path"] == str(backup.resolve()))
        assert (entry["format"], entry["restorable"]) == ("mariabackup", True)
        # auto picks mariabackup for a physical backup; the prepare's settings are stored with the job.
        response = client.post(
            "/api/v1/jobs/restore",
            json={"backup_path": "api/physical-full-backuped", "use_memory": "1G", "write_io_threads": 8},
        )
        assert response.status_code == 201, response.text
        parameters = response.json()["parameters"]
        assert parameters["runner"] == "mariabackup"
        assert (parameters["use_memory"], parameters["read_io_threads"], parameters["write_io_threads"]) == (
            "1G",
            None,
            8,
        )
        xtra = client.post(
            "/api/v1/jobs/restore", json={"backup_path": "api/physical-full-backuped", "runner": "xtrabackup"}
        )
        assert xtra.status_code == 422 and error_fields(xtra.json()) == ["runner"], xtra.text
    finally:
        _remove(backup)


def test_physical_restores_are_refused_with_a_message_per_field(client: TestClient, dumps: dict[str, Path]) -> None:
    backup = _physical_backup(dumps["plain"].parent)
    incremental = _physical_backup(dumps["plain"].parent, "incremental")
    compressed = _physical_backup(dumps["plain"].parent, "full-backuped", "physical-compressed")
    (compressed / "ibdata1").rename(compressed / "ibdata1.qp")
    target = client.post("/api/v1/targets", json={"name": "prod-replica", "user": "restore", "password": "pw"}).json()
    physical = "api/physical-full-backuped"
    cases: list[tuple[dict[str, object], str, str]] = [
        (
            {"backup_path": physical, "runner": "mysql"},
            "runner",
            "the mysql client reads only a mysqldump file (.sql, .sql.gz, .sql.zst, .sql.bz2), and this backup is a "
            "mariabackup directory (a physical copy of a server's files, not SQL): choose mariabackup (auto picks "
            "mariabackup)",
        ),
        ({"backup_path": physical, "runner": "loader"}, "runner", "restorescope's loader reads only"),
        (
            {"backup_path": "api/shop.sql", "runner": "mariabackup"},
            "runner",
            "mariabackup reads only a mariabackup directory (a physical copy of a server's files, not SQL), and this "
            "backup is a mysqldump file (.sql, .sql.gz, .sql.zst, .sql.bz2): choose restorescope's loader or the mysql "
            "client",
        ),
        (
            {"backup_path": physical, "target": {"kind": "saved", "target_id": target["id"]}},
            "target",
            "a physical backup is restored by replacing a server's whole datadir with the backup's files, so it only "
            "goes into a new sandbox",
        ),
        ({"backup_path": physical, "database": "shop"}, "database", "restores the whole server"),
        ({"backup_path": physical, "use_memory": "lots"}, "use_memory", "String should match pattern"),
        ({"backup_path": physical, "read_io_threads": 0}, "read_io_threads", "greater than or equal to 1"),
        ({"backup_path": physical, "write_io_threads": 65}, "write_io_threads", "less than or equal to 64"),
        ({"backup_path": "api/shop.sql", "use_memory": "1G"}, "use_memory", "sets the prepare of a physical backup"),
        ({"backup_path": "api/physical-incremental"}, "backup_path", "an incremental backup"),
        ({"backup_path": "api/physical-compressed"}, "backup_path", "decompress them first (mariabackup --decompress)"),
    ]
    try:
        for body, field, message in cases:
            response = client.post("/api/v1/jobs/restore", json=body)
            assert response.status_code == 422, (body, response.text)
            assert error_fields(response.json()) == [field], (body, response.json())
            assert message in error_message(response.json()), (body, response.json())
    finally:
        _remove(backup)
        _remove(incremental)
        _remove(compressed)
