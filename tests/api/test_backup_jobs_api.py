"""POST /jobs/backup as a client sees it: what is queued, and what is refused next to which field."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from tests.api.conftest import error_fields, error_message


@pytest.fixture(autouse=True)
def leave_the_root_as_found(backup_root: Path) -> Iterator[None]:
    """Other tests list the backup root: what these tests put there goes again."""
    before = set(backup_root.iterdir())
    yield
    for path in set(backup_root.iterdir()) - before:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


@pytest.fixture
def target(client: TestClient) -> dict[str, Any]:
    response = client.post("/api/v1/targets", json={"name": "primary", "user": "backup", "password": "s3cret"})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _post(client: TestClient, target: dict[str, Any], **body: Any) -> Any:
    return client.post("/api/v1/jobs/backup", json={"source": {"kind": "saved", "target_id": target["id"]}, **body})


def test_a_backup_job_is_queued_by_name_with_its_id(
    client: TestClient, target: dict[str, Any], backup_root: Path, redis_server: str
) -> None:
    response = _post(client, target, tool="mydumper", databases=["shop"], threads=3, destination="nightly/one")
    assert response.status_code == 201, response.text
    job = response.json()

    # The run page shows a queued backup, with where it will be written and how.
    assert (job["kind"], job["status"], job["phase"], job["target_id"]) == ("backup", "queued", "queued", target["id"])
    destination = (backup_root / "nightly" / "one").resolve()
    assert job["backup_path"] == str(destination)
    assert job["parameters"] | {"destination": str(destination)} == {
        "source": {"kind": "saved", "target_id": target["id"], "name": target["name"]},
        "tool": "mydumper",
        "databases": ["shop"],
        "threads": 3,
        "compression": "zstd",
        "level": None,
        "destination": str(destination),
        "backup_path": str(destination),
    }
    # The worker gets the job id only: no password travels in the message.
    with redis.Redis.from_url(redis_server) as queue:
        raw = [json.loads(item) for item in queue.lrange("celery", 0, -1)]
    mine = [m for m in raw if m["headers"]["task"] == "backup.run"]
    assert mine and mine[0]["headers"]["argsrepr"] == f"[{job['id']}]"
    assert all("s3cret" not in json.dumps(m) for m in raw)


def test_mysqldump_writes_one_file_named_after_the_database(
    client: TestClient, target: dict[str, Any], backup_root: Path
) -> None:
    job = _post(client, target, databases=["shop"], compression="pigz", level=9, destination="one-file").json()
    assert job["backup_path"] == str((backup_root / "one-file" / "shop.sql.gz").resolve())
    smallest = _post(client, target, databases=["shop"], compression="pbzip2", destination="bz").json()
    assert smallest["backup_path"] == str((backup_root / "bz" / "shop.sql.bz2").resolve())
    every = _post(client, target, compression="none", destination="all").json()
    assert every["backup_path"] == str((backup_root / "all" / "dump.sql").resolve())
    physical = _post(client, target, tool="mariabackup", destination="physical").json()
    assert physical["parameters"]["compression"] == "none"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"destination": "../outside"}, "destination", "is outside the backup roots"),
        ({"destination": "/etc/backup"}, "destination", "is outside the backup roots"),
        ({"destination": "."}, "destination", "is a backup root itself"),
        ({"destination": " "}, "destination", "name a directory to write the backup into"),
        ({"destination": "x", "tool": "mariabackup", "compression": "zstd"}, "compression", "uncompressed"),
        ({"destination": "x", "tool": "mariabackup", "databases": ["shop"]}, "databases", "copies the whole server"),
        ({"destination": "x", "tool": "mysqldump-tab"}, "databases", "name exactly one database"),
        ({"destination": "x", "databases": ["a", "a"]}, "databases", "a database is named twice"),
        ({"destination": "x", "compression": "gzip", "level": 12}, "level", "gzip levels go from 1 to 9"),
        ({"destination": "x", "compression": "none", "level": 3}, "level", "a level applies to compression only"),
        ({"destination": "x", "tool": "mydumper", "compression": "gzip", "level": 3}, "level", "its own gzip"),
        ({"destination": "x", "threads": 0}, "threads", "greater than or equal to 1"),
        ({"destination": "x", "databases": ["a/b"]}, "databases.0", "should match pattern"),
        ({"destination": "x", "tool": "xtrabackup"}, "tool", "Input should be"),
    ],
)
def test_bad_requests_are_refused_next_to_their_field(
    client: TestClient, target: dict[str, Any], body: dict[str, Any], field: str, message: str
) -> None:
    response = _post(client, target, **body)

    # The launch form shows the message under that field, and no job is queued.
    assert response.status_code == 422, response.text
    assert error_fields(response.json()) == [field]
    assert message in error_message(response.json())
    assert client.get("/api/v1/jobs", params={"kind": "backup"}).json()["count"] == 0


def test_an_existing_destination_is_never_overwritten(
    client: TestClient, target: dict[str, Any], backup_root: Path
) -> None:
    taken = backup_root / "taken"
    taken.mkdir(exist_ok=True)
    (taken / "shop.sql").write_text("-- keep me\n")
    (backup_root / "a-file").write_text("")
    empty = backup_root / "empty-dir"
    empty.mkdir(exist_ok=True)

    response = _post(client, target, destination="taken")
    assert response.status_code == 422
    assert error_message(response.json()).startswith("taken already exists and is not empty")
    assert error_fields(_post(client, target, destination="a-file").json()) == ["destination"]
    # An empty directory made for the backup is fine.
    assert _post(client, target, destination="empty-dir").status_code == 201


def test_an_unknown_source_is_refused(client: TestClient) -> None:
    response = client.post("/api/v1/jobs/backup", json={"source": {"target_id": 999}, "destination": "x"})
    assert response.status_code == 422
    assert error_fields(response.json()) == ["source.target_id"]
    assert error_message(response.json()) == "no saved target with id 999"


def test_a_cancelled_backup_is_retried_as_a_backup(
    client: TestClient, target: dict[str, Any], redis_server: str
) -> None:
    job = _post(client, target, databases=["shop"], destination="retried").json()
    assert client.post(f"/api/v1/jobs/{job['id']}/cancel").json()["status"] == "cancelled"

    retry = client.post(f"/api/v1/jobs/{job['id']}/retry")

    # The retry is a backup with the same parameters, sent to the backup task.
    assert retry.status_code == 201, retry.text
    again = retry.json()
    assert (again["kind"], again["parent_id"], again["parameters"]) == ("backup", job["id"], job["parameters"])
    with redis.Redis.from_url(redis_server) as queue:
        tasks = [json.loads(item)["headers"] for item in queue.lrange("celery", 0, -1)]
    assert {"task": "backup.run", "argsrepr": f"[{again['id']}]"} in [
        {"task": h["task"], "argsrepr": h["argsrepr"]} for h in tasks
    ]
