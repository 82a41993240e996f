"""Restore jobs with a chosen runner, through the real stack: API -> Redis -> Celery worker -> restorescope's
parallel loader -> sandbox MariaDB, on dumps made by the real mysqldump, mysqldump --tab and mydumper."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.sandboxes.options import ServerOptions
from tests.integration.conftest import server_processes
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PAGE_SIZE = 16384


@pytest.fixture(scope="session")
def layout_dumps(backup_root: Path, work_root: Path) -> Iterator[dict[str, Path]]:
    """shop.sql, shop-tab/ and shop-mydumper/ of one `shop` database, in a folder of their own (the demo folder's
    listing is checked elsewhere)."""
    from worker.demo import make_demo_dumps

    folder = backup_root / "layouts"
    paths = make_demo_dumps(folder, work_root / "make-layouts", rows=3000, log=lambda _line: None, directories=True)
    yield {path.name: path for path in paths}


def _source_counts(folder: Path) -> dict[str, int]:
    manifest = folder / "row-counts.txt"
    return {line.split()[0]: int(line.split()[1]) for line in manifest.read_text().splitlines() if line.strip()}


@pytest.mark.parametrize(
    ("name", "database"),
    [("shop-mydumper", "shop"), ("shop-tab", "shop_tab"), ("shop.sql", "shop")],
)
def test_loader_restores_each_format_with_two_threads(
    live_worker: Stack, layout_dumps: dict[str, Path], name: str, database: str
) -> None:
    job = live_worker.restore(f"layouts/{name}", runner="loader", threads=2, chunk_size=1 << 20)
    done = live_worker.wait_until_done(job["id"])

    # The Jobs page shows the job succeeded at 100%, with a rate in MB/s and rows/s.
    assert done["status"] == "succeeded", done["error"]
    assert done["percent"] == 100.0 and done["bytes_done"] == done["bytes_total"] > 0
    assert done["mb_per_s"] is not None and done["rows_per_s"] is not None
    # The run page lists the runner, threads and chunk size with the other parameters.
    parameters = done["parameters"]
    assert (parameters["runner"], parameters["threads"], parameters["chunk_size"]) == ("loader", 2, 1 << 20)
    # Every table holds the rows the source had (a --tab dump names no database: it goes into one named after it).
    expected = {
        f"{database}.{key.split('.', 1)[1]}": rows for key, rows in _source_counts(layout_dumps[name].parent).items()
    }
    verified = {f"{v['database']}.{v['table']}": (v["expected"], v["actual"], v["ok"]) for v in done["verification"]}
    assert verified == {table: (rows, rows, True) for table, rows in expected.items()}
    assert done["rows_done"] == sum(expected.values())
    # The log says which runner ran and how.
    logs = live_worker.log_messages(job["id"])
    assert "restoring with restorescope's loader: 2 threads, chunks of 1 MiB" in logs, logs
    assert not Path(done["sandbox_dir"]).exists() and server_processes(done["sandbox_dir"]) == []


@pytest.mark.parametrize(
    ("runner", "name", "database", "said"),
    [
        ("myloader", "shop-mydumper", "shop", "restoring with myloader: 2 threads"),
        ("mysqlimport", "shop-tab", "shop_tab", "restoring with the mysql client and mysqlimport: 2 threads"),
    ],
)
def test_the_dba_tools_restore_their_own_formats(
    live_worker: Stack, layout_dumps: dict[str, Path], runner: str, name: str, database: str, said: str
) -> None:
    job = live_worker.restore(f"layouts/{name}", runner=runner, threads=2, capture="none")
    done = live_worker.wait_until_done(job["id"])

    # The job succeeds at 100% with every table verified, and the log says which tool ran.
    assert done["status"] == "succeeded", done["error"]
    assert done["percent"] == 100.0 and done["bytes_done"] == done["bytes_total"] > 0
    expected = {
        f"{database}.{key.split('.', 1)[1]}": rows for key, rows in _source_counts(layout_dumps[name].parent).items()
    }
    verified = {f"{v['database']}.{v['table']}": (v["expected"], v["actual"], v["ok"]) for v in done["verification"]}
    assert verified == {table: (rows, rows, True) for table, rows in expected.items()}
    assert said in live_worker.log_messages(job["id"])


def _trace(stack: Stack, job_id: int) -> dict[str, Any]:
    response = stack.http.get(f"/jobs/{job_id}/trace")
    assert response.status_code == 200, response.text
    trace: dict[str, Any] = response.json()
    return trace


def test_a_captured_loader_restore_has_a_lane_per_loading_connection(
    live_worker: Stack, layout_dumps: dict[str, Path]
) -> None:
    job = live_worker.restore("layouts/shop-mydumper", runner="loader", threads=2, capture="strace")
    done = live_worker.wait_until_done(job["id"])
    assert done["status"] == "succeeded", done["error"]

    # The IO timeline has the loader's connections as server threads of their own, next to the page cleaner,
    # and the page writes into the tables' .ibd files.
    trace = _trace(live_worker, job["id"])
    assert trace["status"] == "complete" and trace["operations"] > 0
    roles = {lane["tid"]: lane["role"] for lane in trace["lanes"]}
    connections = [role for role in roles.values() if role.startswith("connection ")]
    # Named by program: the loader's own, apart from the sampler's connection that reads server status.
    loading = [role for role in connections if role.endswith("(restorescope-loader)")]
    assert len(loading) >= 2, "|".join(sorted(roles.values()))
    assert "page cleaner" in roles.values(), roles
    writes = live_worker.http.get(
        f"/jobs/{job['id']}/trace/operations", params={"kinds": "write", "path": ".ibd", "limit": 1000}
    ).json()["items"]
    assert writes and all(op["tid"] in roles for op in writes)
    assert all(op["offset"] % PAGE_SIZE == 0 for op in writes)


def test_the_mysql_client_cannot_restore_a_directory(live_worker: Stack, layout_dumps: dict[str, Path]) -> None:
    response = live_worker.http.post("/jobs/restore", json={"backup_path": "layouts/shop-mydumper", "runner": "mysql"})

    # The launch form shows the message under the runner select, and no job is queued.
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "runner"]
    assert error["msg"] == (
        "the mysql client reads only a mysqldump file (.sql, .sql.gz, .sql.zst, .sql.bz2), and this backup is a "
        "mydumper directory: choose restorescope's loader or myloader (auto picks the loader)"
    )


def _loading(job: dict[str, Any]) -> bool:
    return job["phase"] == "restoring" and int(job["bytes_done"]) > 0


def test_a_cancelled_loader_job_ends_cancelled(live_worker: Stack, big_dump: Path) -> None:
    # Small chunks: the load is many short transactions, so it is surely mid-way when the cancel arrives.
    job = live_worker.restore("big/shop.sql", runner="loader", threads=2, chunk_size=64 << 10, capture="none")
    running = live_worker.wait_for(job["id"], _loading, timeout_s=120)
    assert running["percent"] < 100
    assert live_worker.http.post(f"/jobs/{job['id']}/cancel").status_code == 200

    # The Jobs page shows the job cancelled by the user, its sandbox gone.
    done = live_worker.wait_until_done(job["id"], timeout_s=30)
    assert done["status"] == "cancelled", done
    assert "cancelled by user" in done["error"]
    assert not Path(done["sandbox_dir"]).exists() and server_processes(done["sandbox_dir"]) == []


PASSWORD = "Res0me-Pa55word"


@pytest.fixture(scope="module")
def saved_server(work_root: Path) -> Iterator[Sandbox]:
    """An existing server saved as a target, reached with a user and password."""
    sandbox = Sandbox(
        work_root / "saved-loader", "target", ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _: None
    )
    with sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE USER 'restore'@'localhost' IDENTIFIED BY '{PASSWORD}'")
            cursor.execute("GRANT ALL ON *.* TO 'restore'@'localhost'")
        yield sandbox


def test_a_cancelled_load_into_a_saved_server_resumes_on_retry(
    live_worker: Stack, big_dump: Path, saved_server: Sandbox
) -> None:
    target = live_worker.http.post(
        "/targets",
        json={"name": "resume", "socket": str(saved_server.socket_path), "user": "restore", "password": PASSWORD},
    ).json()
    job = live_worker.restore(
        "big/shop.sql",
        target={"kind": "saved", "target_id": target["id"]},
        runner="loader",
        threads=2,
        chunk_size=64 << 10,
        capture="none",
    )
    live_worker.wait_for(job["id"], _loading, timeout_s=120)
    assert live_worker.http.post(f"/jobs/{job['id']}/cancel").status_code == 200
    cancelled = live_worker.wait_until_done(job["id"], timeout_s=30)

    # The user is told the load can be resumed, and how.
    assert cancelled["status"] == "cancelled", cancelled
    assert "retry the job to resume where it stopped" in cancelled["error"]

    retried = live_worker.http.post(f"/jobs/{job['id']}/retry").json()
    done = live_worker.wait_until_done(retried["id"])
    # The retry continues the load instead of starting over, and every table ends up complete.
    assert done["status"] == "succeeded", done["error"]
    assert done["verification"] and all(v["ok"] for v in done["verification"])
    logs = live_worker.log_messages(retried["id"])
    assert any(m.startswith("resuming an unfinished restore of this dump") for m in logs), logs
    with saved_server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = '_restorescope'")
        row = cursor.fetchone()
    # Nothing of the load's bookkeeping is left in the user's server once it finished.
    assert row is not None and row[0] == 0
