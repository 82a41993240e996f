"""Real restores: API process -> Redis -> Celery worker process -> mysql client -> sandbox MariaDB."""

import os
import shutil
import signal
from pathlib import Path

import pymysql
import pytest

from tests.integration.conftest import server_processes
from tests.stack import STACK_ADMIN, Stack

pytestmark = pytest.mark.integration


def _counts_in(dump: Path) -> dict[str, int]:
    """Rows per table as the source server had them, read from the demo's own manifest."""
    manifest = dump.parent / "row-counts.txt"
    return {line.split()[0]: int(line.split()[1]) for line in manifest.read_text().splitlines() if line.strip()}


@pytest.mark.parametrize("name", ["shop.sql", "shop.sql.gz", "shop.sql.zst"])
def test_restore_into_a_sandbox_verifies_every_table(
    live_worker: Stack, demo_dumps: dict[str, Path], work_root: Path, name: str
) -> None:
    job = live_worker.restore(f"demo/{name}")
    done = live_worker.wait_until_done(job["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["started_by"] == STACK_ADMIN
    assert done["percent"] == 100.0 and done["bytes_done"] == done["bytes_total"] == demo_dumps[name].stat().st_size
    assert done["rows_done"] > 0 and done["mb_per_s"] is not None and done["duration_s"] > 0
    assert done["server_flavour"] == "mariadb" and done["server_version"].startswith("10.")
    assert done["sandbox_port"] and not done["sandbox_kept"]
    assert {"starting_server", "restoring", "verifying", "cleaning_up", "done"} <= set(done["phase_times"])

    expected = _counts_in(demo_dumps["shop.sql"])
    verified = {f"{v['database']}.{v['table']}": (v["expected"], v["actual"], v["ok"]) for v in done["verification"]}
    assert verified == {table: (rows, rows, True) for table, rows in expected.items()}
    assert done["backup_verdict"] == "restores"

    server = live_worker.http.get(f"/jobs/{job['id']}/server").json()
    assert [s["moment"] for s in server["snapshots"]] == ["start", "end"]
    assert server["snapshots"][0]["variables"]["innodb_doublewrite"] == "ON"
    assert server["status_delta"]["Handler_write"] >= sum(expected.values())
    # The sandbox is gone once the job is over: no directory, no server process.
    assert not Path(done["sandbox_dir"]).exists()
    assert server_processes(done["sandbox_dir"]) == []


def test_demo_dumps_are_listed_for_the_picker(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    listed = {Path(b["path"]).name: b for b in live_worker.http.get("/backups").json()["data"] if "/demo/" in b["path"]}
    assert {name: (b["format"], b["compression"], b["restorable"]) for name, b in listed.items()} == {
        "shop.sql": ("mysqldump", None, True),
        "shop.sql.gz": ("mysqldump", "gzip", True),
        "shop.sql.zst": ("mysqldump", "zstd", True),
        "shop-nodb.sql": ("mysqldump", None, True),
    }
    assert listed["shop.sql"]["details"]["databases"] == ["shop"]
    assert listed["shop-nodb.sql"]["details"]["has_use_statements"] is False


def test_server_options_reach_the_sandbox(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    job = live_worker.restore(
        "demo/shop.sql.gz",
        target={
            "kind": "sandbox",
            "preset": "fast-restore",
            "options": {"innodb_buffer_pool_size": "256M", "innodb_log_file_size": "256M", "aio_mode": "off"},
        },
    )
    done = live_worker.wait_until_done(job["id"])
    assert done["status"] == "succeeded", done["error"]
    variables = live_worker.http.get(f"/jobs/{job['id']}/server").json()["snapshots"][0]["variables"]
    assert variables["innodb_doublewrite"] == "OFF"
    assert variables["innodb_flush_log_at_trx_commit"] == "0"
    assert variables["innodb_autoinc_lock_mode"] == "2"
    assert variables["innodb_use_native_aio"] == "OFF"
    assert variables["innodb_buffer_pool_size"] == str(256 * 1024 * 1024)
    assert variables["log_bin"] == "OFF"


def test_dump_without_database_goes_into_one_named_after_it(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    job = live_worker.restore("demo/shop-nodb.sql", target={"kind": "sandbox", "keep": True})
    done = live_worker.wait_until_done(job["id"])
    sandbox_dir = Path(done["sandbox_dir"])
    try:
        assert done["status"] == "succeeded", done["error"]
        assert {v["database"] for v in done["verification"]} == {"shop_nodb"}
        assert all(v["ok"] for v in done["verification"])
        assert done["sandbox_kept"] and sandbox_dir.exists()
        # A kept sandbox is still up and holds the data; the log says how to reach it.
        hint = next(m for m in live_worker.log_messages(job["id"]) if m.startswith("sandbox kept"))
        socket_path = hint.split("--socket=")[1].split()[0]
        connection = pymysql.connect(unix_socket=socket_path, user="root", database="shop_nodb")
        with connection, connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM customers")
            row = cursor.fetchone()
            assert row is not None and row[0] == _counts_in(demo_dumps["shop.sql"])["shop.customers"]
    finally:
        _remove_kept_sandbox(sandbox_dir)


def _remove_kept_sandbox(sandbox_dir: Path) -> None:
    for pid in server_processes(str(sandbox_dir)):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(sandbox_dir, ignore_errors=True)
