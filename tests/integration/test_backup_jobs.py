"""Backup jobs through the real stack: API -> Redis -> Celery worker -> mysqldump, mysqldump --tab, mydumper and
mariabackup against a real server saved as a target; each backup is then detected and restored, and its rows
counted."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.backups.detect import detect_directory, detect_file
from app.sandboxes.options import ServerOptions
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PASSWORD = "b4ck-up 'pass\"word"
SHOP_ROWS = {"customers": 2000, "orders": 3000, "empty": 0}
BIG_ROWS = 150_000


@pytest.fixture(scope="module")
def source_server(work_root: Path) -> Iterator[Sandbox]:
    """A running server on this host with a `shop` database and a `big` one, saved as a target below."""
    sandbox = Sandbox(
        work_root / "backup-source", "source", ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _: None
    )
    with sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE USER 'backup'@'localhost' IDENTIFIED BY %s", (PASSWORD,))
            cursor.execute("GRANT ALL ON *.* TO 'backup'@'localhost'")
            cursor.execute("CREATE DATABASE shop")
            cursor.execute("USE shop")  # seq_1_to_N (the sequence engine) needs a current database
            cursor.execute("CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(60), note TEXT)")
            cursor.execute(
                "INSERT INTO shop.customers SELECT seq, CONCAT('customer ', seq), IF(seq % 7 = 0, NULL, "
                "CONCAT('it''s \\\\ \"quoted\"\\n\\t', MD5(seq))) FROM seq_1_to_2000"
            )
            cursor.execute(
                "CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer_id INT, total DECIMAL(9,2))"
            )
            cursor.execute("INSERT INTO shop.orders SELECT NULL, 1 + seq % 2000, seq / 7 FROM seq_1_to_3000")
            cursor.execute("CREATE TABLE shop.empty (id INT PRIMARY KEY)")
            cursor.execute("CREATE DATABASE big")
            cursor.execute("CREATE TABLE big.rows (id INT PRIMARY KEY, c CHAR(120), pad CHAR(72))")
            cursor.execute(
                f"INSERT INTO big.rows SELECT seq, CONCAT(MD5(seq), MD5(seq + 1), MD5(seq + 2)), "
                f"CONCAT(SHA1(seq), MD5(seq * 3)) FROM seq_1_to_{BIG_ROWS}"
            )
        yield sandbox


def _save_target(stack: Stack, name: str, socket: Path, password: str) -> dict[str, Any]:
    response = stack.http.post(
        "/targets", json={"name": name, "socket": str(socket), "user": "backup", "password": password}
    )
    assert response.status_code == 201, response.text
    target: dict[str, Any] = response.json()
    # The API commits a request's unit of work after it has answered (FastAPI runs a yield dependency's exit
    # code after the response; see /work/coord/REQUESTS.md 22:02): wait until the next request can see it.
    deadline = time.monotonic() + 10
    while not any(t["id"] == target["id"] for t in stack.http.get("/targets").json()["data"]):
        assert time.monotonic() < deadline, f"the saved target {target} never showed in GET /targets"
        time.sleep(0.05)
    return target


@pytest.fixture(scope="module")
def source(stack: Stack, source_server: Sandbox) -> dict[str, Any]:
    return _save_target(stack, "backup-source", source_server.socket_path, PASSWORD)


def _backup(stack: Stack, source: dict[str, Any], **body: Any) -> dict[str, Any]:
    response = stack.http.post("/jobs/backup", json={"source": {"kind": "saved", "target_id": source["id"]}, **body})
    assert response.status_code == 201, response.text
    job: dict[str, Any] = response.json()
    return job


def _restored_rows(stack: Stack, backup_path: str) -> dict[str, tuple[int | None, int | None, bool]]:
    job = stack.restore(backup_path, capture="none")
    done = stack.wait_until_done(job["id"])
    assert done["status"] == "succeeded", done["error"]
    return {v["table"]: (v["expected"], v["actual"], v["ok"]) for v in done["verification"]}


@pytest.mark.parametrize(
    ("tool", "compression", "suffix", "detected"),
    [
        ("mysqldump", "zstd", "shop.sql.zst", ("mysqldump", "zstd")),
        ("mysqldump-tab", "pigz", "", ("mysqldump-tab", "gzip")),
        ("mydumper", "zstd", "", ("mydumper", "zstd")),
        ("mydumper", "pigz", "", ("mydumper", "gzip")),
        ("mysqldump", "pbzip2", "shop.sql.bz2", ("mysqldump", "bzip2")),
        ("mydumper", "pbzip2", "", ("mydumper", "bzip2")),
    ],
)
def test_a_logical_backup_is_registered_and_restores(
    live_worker: Stack,
    source: dict[str, Any],
    backup_root: Path,
    tool: str,
    compression: str,
    suffix: str,
    detected: tuple[str, str],
) -> None:
    destination = f"made/{tool}-{compression}"
    job = _backup(
        live_worker,
        source,
        tool=tool,
        compression=compression,
        databases=["shop"],
        threads=2,
        destination=destination,
    )
    done = live_worker.wait_until_done(job["id"], timeout_s=120)

    # The run page shows the backup succeeded at 100%, with the tool and the path it wrote.
    assert done["status"] == "succeeded", (done["error"], live_worker.log_messages(job["id"]))
    assert done["kind"] == "backup" and done["percent"] == 100.0 and done["mb_per_s"] is not None
    written = backup_root / destination / suffix if suffix else backup_root / destination
    assert done["parameters"]["tool"] == tool and done["backup_path"] == str(written.resolve())
    # The backup list has it, as the format restorescope restores, compressed as asked.
    found = detect_file(written) if written.is_file() else detect_directory(written)
    assert found is not None and (found.format, found.compression) == detected
    backups = {b["path"]: b for b in live_worker.http.get("/backups").json()["data"]}
    assert backups[done["backup_path"]]["restorable"] and done["backup_id"] == backups[done["backup_path"]]["id"]
    # Nothing half-written is left beside it, and the log tells the sizes and the compression ratio.
    assert [p.name for p in written.parent.parent.iterdir() if p.name.startswith(".")] == []
    # (mydumper's own gzip leaves no uncompressed size to compare with.)
    said = "compression ratio" if (tool, compression) != ("mydumper", "pigz") else "MB on disk;"
    assert any(said in line for line in live_worker.log_messages(job["id"]))

    # A restore of it (runner auto) gives back every row of every table.
    restored = _restored_rows(live_worker, done["backup_path"])
    assert restored == {table: (rows, rows, True) for table, rows in SHOP_ROWS.items()}


def test_a_mariabackup_backup_restores_through_a_restore_job(
    live_worker: Stack, source: dict[str, Any], backup_root: Path
) -> None:
    job = _backup(live_worker, source, tool="mariabackup", destination="made/physical", threads=2)
    done = live_worker.wait_until_done(job["id"], timeout_s=120)

    # The job succeeds and the backup is listed as a mariabackup directory, uncompressed.
    assert done["status"] == "succeeded", (done["error"], live_worker.log_messages(job["id"]))
    written = backup_root / "made" / "physical"
    found = detect_directory(written)
    assert found is not None and found.format == "mariabackup"
    assert done["parameters"]["compression"] == "none" and done["backup_path"] == str(written.resolve())
    # A restore job (runner auto: mariabackup) prepares it, starts a sandbox on it and finds every row.
    restore = live_worker.restore(done["backup_path"], capture="none")
    assert restore["parameters"]["runner"] == "mariabackup"
    restored = live_worker.wait_until_done(restore["id"])
    assert restored["status"] == "succeeded", restored["error"]
    counted = {(v["database"], v["table"]): (v["actual"], v["ok"]) for v in restored["verification"]}
    expected = {("shop", table): (rows, True) for table, rows in SHOP_ROWS.items()} | {
        ("big", "rows"): (BIG_ROWS, True)
    }
    assert {key: counted.get(key) for key in expected} == expected


def test_a_destination_outside_the_roots_is_refused(live_worker: Stack, source: dict[str, Any]) -> None:
    response = live_worker.http.post(
        "/jobs/backup",
        json={"source": {"kind": "saved", "target_id": source["id"]}, "destination": "../../escape"},
    )

    # The launch form shows the message under the destination field, and no job is queued.
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "destination"]
    assert "is outside the backup roots" in error["msg"] and "backups are only written under" in error["msg"]


def test_a_cancelled_backup_leaves_nothing_behind(
    live_worker: Stack, source: dict[str, Any], backup_root: Path
) -> None:
    # zstd -19 on one thread makes the dump of `big` last several seconds.
    job = _backup(
        live_worker, source, destination="made/cancelled", databases=["big"], compression="zstd", level=19, threads=1
    )
    live_worker.wait_for(job["id"], lambda j: j["phase"] == "backing_up" and j["bytes_done"] > 0, timeout_s=60)
    # While it runs, the backup list does not offer the half-written dump.
    listed = [b["path"] for b in live_worker.http.get("/backups").json()["data"]]
    assert not [path for path in listed if "cancelled" in path], listed
    assert live_worker.http.post(f"/jobs/{job['id']}/cancel").status_code == 200
    cancelled = live_worker.wait_until_done(job["id"], timeout_s=30)

    # The user sees it cancelled, told that nothing was written; neither the destination nor a partial
    # directory exists, and no backup was registered.
    assert cancelled["status"] == "cancelled", cancelled
    assert "its partial files removed" in cancelled["error"]
    made = backup_root / "made"
    assert not (made / "cancelled").exists()
    assert [p.name for p in made.iterdir() if "cancelled" in p.name] == []
    assert cancelled["backup_id"] is None


def test_a_wrong_password_fails_the_job_with_a_clear_message(
    live_worker: Stack, source_server: Sandbox, backup_root: Path
) -> None:
    target = _save_target(live_worker, "backup-source-wrong-password", source_server.socket_path, "not it")
    job = live_worker.http.post(
        "/jobs/backup",
        json={"source": {"kind": "saved", "target_id": target["id"]}, "destination": "made/refused"},
    ).json()
    done = live_worker.wait_until_done(job["id"], timeout_s=60)

    # The run page says the server refused the user and what to edit; the password appears nowhere.
    assert done["status"] == "failed"
    assert "refused user 'backup': wrong password or no such user" in done["error"]
    assert "edit the saved target's user and password" in done["error"]
    assert not (backup_root / "made" / "refused").exists()
