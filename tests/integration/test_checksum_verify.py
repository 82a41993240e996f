"""Checksum verification through the real stack: a restore of the demo dump is compared, table by table, with
CHECKSUM TABLE ... EXTENDED of a saved server holding the data the dump was taken from (a sandbox the test loads
with the same dump)."""

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.sandboxes.options import ServerOptions
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PASSWORD = "Ch3cksum-Pa55word"


@pytest.fixture(scope="module")
def source_server(work_root: Path, demo_dumps: dict[str, Path]) -> Iterator[Sandbox]:
    """The server the backup was taken from: the demo dump loaded with the mysql client, reached with a password."""
    sandbox = Sandbox(
        work_root / "checksum-source", "source", ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _: None
    )
    with sandbox:
        sandbox.start()
        with demo_dumps["shop.sql"].open("rb") as dump:
            subprocess.run(
                [shutil.which("mariadb") or "mysql", "--no-defaults", *sandbox.client_args()],
                stdin=dump,
                check=True,
                timeout=120,
            )
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE USER 'checker'@'localhost' IDENTIFIED BY '{PASSWORD}'")
            cursor.execute("GRANT SELECT ON *.* TO 'checker'@'localhost'")
        yield sandbox


def _saved(stack: Stack, name: str, socket: Path) -> int:
    response = stack.http.post(
        "/targets", json={"name": name, "socket": str(socket), "user": "checker", "password": PASSWORD}
    )
    assert response.status_code == 201, response.text
    target_id: int = response.json()["id"]
    return target_id


def _checksums(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{v['database']}.{v['table']}": v for v in job["verification"] if v["check"] == "checksum"}


def test_a_faithful_restore_matches_the_source_table_by_table(live_worker: Stack, source_server: Sandbox) -> None:
    source_id = _saved(live_worker, "checksum-source", source_server.socket_path)
    job = live_worker.restore("demo/shop.sql", capture="none", checksum_source_id=source_id)
    done = live_worker.wait_until_done(job["id"])

    # The run page shows the job succeeded and the backup restores, with a checksum row per table, each matching.
    assert done["status"] == "succeeded", done["error"]
    assert done["backup_verdict"] == "restores"
    checksums = _checksums(done)
    row_counts = {f"{v['database']}.{v['table']}" for v in done["verification"] if v["check"] == "row_count"}
    assert set(checksums) == row_counts and "shop.orders" in checksums
    assert all(v["ok"] and v["expected"] == v["actual"] is not None for v in checksums.values()), checksums
    # The log says how long checksumming took.
    logs = live_worker.log_messages(job["id"])
    assert any(m.startswith(f"compared CHECKSUM TABLE of {len(checksums)} tables") for m in logs), logs


def test_a_table_that_differs_from_the_source_fails_the_job(live_worker: Stack, source_server: Sandbox) -> None:
    source_id = _saved(live_worker, "checksum-changed", source_server.socket_path)
    with source_server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("UPDATE shop.products SET price = price + 1 WHERE id = 1")
        connection.commit()
    try:
        job = live_worker.restore("demo/shop.sql", capture="none", checksum_source_id=source_id)
        done = live_worker.wait_until_done(job["id"])
    finally:
        with source_server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("UPDATE shop.products SET price = price - 1 WHERE id = 1")
            connection.commit()

    # The run page shows the job failed naming the table, and the backup marked as one that does not restore.
    assert done["status"] == "failed"
    assert "1 of" in done["error"] and "shop.products" in done["error"], done["error"]
    assert done["backup_verdict"] == "does_not_restore"
    checksums = _checksums(done)
    assert [name for name, v in checksums.items() if not v["ok"]] == ["shop.products"]
    assert "differs from the source" in checksums["shop.products"]["detail"]


def test_an_unreachable_source_is_skipped_with_a_warning(
    live_worker: Stack, source_server: Sandbox, tmp_path: Path
) -> None:
    # A source whose server is not running: nothing listens on its socket.
    source_id = _saved(live_worker, "checksum-gone", tmp_path / "mysqld.sock")
    job = live_worker.restore("demo/shop.sql", capture="none", checksum_source_id=source_id)
    done = live_worker.wait_until_done(job["id"])

    # The row counts decide: the job succeeds, without checksum rows, and the log says why.
    assert done["status"] == "succeeded", done["error"]
    assert _checksums(done) == {}
    logs = live_worker.log_messages(job["id"])
    assert any("checksums not compared: the source 'checksum-gone' is not reachable" in m for m in logs), logs


def test_an_unknown_source_is_refused(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    response = live_worker.http.post("/jobs/restore", json={"backup_path": "demo/shop.sql", "checksum_source_id": 9999})
    # The launch form shows the message under the field.
    assert response.status_code == 422
    assert "no saved target with id 9999" in response.text
