"""Drills and trends over real restores: Celery beat -> the scheduler's tick on the worker -> a restore job into a
sandbox MariaDB -> the trends API; notifications from the tick to a real HTTP receiver."""

import hashlib
import hmac
import json
import math
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.core.config import get_settings
from app.core.db import session_scope
from app.core.queue import enqueue_job
from app.drills.service import DRILL_STARTED_BY
from app.jobs.schemas import RestoreJobCreate, SandboxTargetSpec
from app.jobs.service import create_restore_job
from tests.conftest import free_port
from tests.stack import Stack

pytestmark = pytest.mark.integration

MB = 1_000_000


@pytest.fixture(scope="module")
def scheduler(stack: Stack) -> Iterator[Stack]:
    """The stack with Celery beat running, for this module only (its tick runs on the worker every second)."""
    stack.start_beat()
    try:
        yield stack
    finally:
        stack.stop_beat()


@pytest.fixture
def drills(scheduler: Stack, live_worker: Stack) -> Stack:
    return live_worker


def protect(stack: Stack, **fields: Any) -> dict[str, Any]:
    response = stack.http.post("/protected-databases", json={"database": "shop", "rto_s": 3600, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def wait(what: str, found: Callable[[], Any], timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what} did not happen in {timeout_s} s")


def drills_of(stack: Stack, protected_id: int) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = stack.http.get("/drills", params={"protected_database_id": protected_id}).json()[
        "data"
    ]
    return listed


def seconds(times: list[str]) -> float:
    return (datetime.fromisoformat(times[1]) - datetime.fromisoformat(times[0])).total_seconds()


def test_a_drill_scheduled_a_minute_ahead_runs_and_feeds_the_trends(
    drills: Stack, demo_dumps: dict[str, Path], backup_root: Path
) -> None:
    folder = backup_root / "drilled"
    folder.mkdir(exist_ok=True)
    shutil.copy(demo_dumps["shop.sql.gz"], folder / "shop-monday.sql.gz")
    now = datetime.now(UTC)
    slot = (now + timedelta(minutes=1)).replace(second=0, microsecond=0)
    protected = protect(
        drills, name="shop drilled", backup_glob="drilled/*", drill_schedule=f"{slot.minute} {slot.hour} * * *"
    )
    assert protected["status"]["next_drill_at"] == slot.isoformat().replace("+00:00", "Z")

    drill = wait("the scheduled drill", lambda: next(iter(drills_of(drills, protected["id"])), None), 150)
    assert drill["trigger"] == "schedule" and drill["job_id"] is not None
    assert datetime.fromisoformat(drill["scheduled_for"]) == slot
    assert drill["backup_path"] == str((folder / "shop-monday.sql.gz").resolve())
    scheduled_job = drills.wait_until_done(drill["job_id"])
    assert scheduled_job["status"] == "succeeded", scheduled_job["error"]
    assert scheduled_job["started_by"] == DRILL_STARTED_BY and scheduled_job["backup_verdict"] == "restores"
    assert datetime.fromisoformat(scheduled_job["started_at"]) >= slot
    assert all(v["ok"] for v in scheduled_job["verification"]) and scheduled_job["verification"]

    # Two more drills by hand, one after the other: three real runs of the same method.
    jobs = [scheduled_job]
    for _ in range(2):
        started = drills.http.post(f"/protected-databases/{protected['id']}/drills")
        assert started.status_code == 201, started.text
        jobs.append(drills.wait_until_done(started.json()["job_id"]))
        assert jobs[-1]["status"] == "succeeded", jobs[-1]["error"]

    trends = drills.http.get("/trends").json()
    [shop] = [d for d in trends["databases"] if d["protected_database_id"] == protected["id"]]
    runs = {r["job_id"]: r for r in shop["runs"]}
    assert sorted(runs) == sorted(j["id"] for j in jobs) and all(r["drill"] for r in runs.values())
    size = (folder / "shop-monday.sql.gz").stat().st_size
    for job in jobs:
        run = runs[job["id"]]
        assert run["method"] == "loader · mysqldump (gzip)" and run["status"] == "succeeded"
        assert run["duration_s"] == pytest.approx(job["duration_s"], abs=0.01)
        assert run["restore_s"] == pytest.approx(seconds(job["phase_times"]["restoring"]), abs=0.001)
        assert run["mb_per_s"] == pytest.approx(size / run["restore_s"] / MB, rel=1e-6)
    assert shop["days"][-1]["state"] == "ok" and shop["days"][-1]["runs"] == 3

    # The estimate from the job records themselves: size over the median throughput, plus the median time
    # outside the restore (sandbox start, verification).
    rates = [size / seconds(j["phase_times"]["restoring"]) for j in jobs]
    overheads = [j["duration_s"] - seconds(j["phase_times"]["restoring"]) for j in jobs]
    estimate = shop["status"]["estimate"]
    assert estimate["method"] == "loader · mysqldump (gzip)"
    assert sorted(estimate["job_ids"]) == sorted(j["id"] for j in jobs)
    assert estimate["mb_per_s"] == pytest.approx(statistics.median(rates) / MB, rel=1e-6)
    expected_s = size / statistics.median(rates) + statistics.median(overheads)
    assert estimate["seconds"] == pytest.approx(expected_s, abs=0.01)
    assert shop["status"]["rto_state"] == "within" and shop["status"]["overdue_since"] is None
    assert shop["status"]["next_drill_at"] == (slot + timedelta(days=1)).isoformat().replace("+00:00", "Z")

    # The next backup is many times bigger (a gzip of many members is still one valid .sql.gz): at the measured
    # throughput it no longer restores within an RTO the small one met. A drill this small takes under a second on
    # a calm machine, so the breach comes from the size, not from a sub-second RTO an integer cannot express.
    grown = folder / "shop-tuesday.sql.gz"
    copies = max(50, math.ceil(3 * statistics.median(rates) / size))  # at least 3 s at the measured rate
    grown.write_bytes((folder / "shop-monday.sql.gz").read_bytes() * copies)
    assert drills.http.get("/backups").status_code == 200
    status = drills.http.get(f"/protected-databases/{protected['id']}").json()["status"]
    assert status["latest_backup"]["path"] == str(grown.resolve())
    grown_estimate = status["estimate"]
    expected_s = grown.stat().st_size / statistics.median(rates) + statistics.median(overheads)
    assert grown_estimate["seconds"] == pytest.approx(expected_s, abs=0.01) and grown_estimate["seconds"] > 2
    tight = int(grown_estimate["seconds"] / 2)
    patched = drills.http.patch(f"/protected-databases/{protected['id']}", json={"rto_s": tight})
    assert patched.status_code == 200, patched.text
    assert patched.json()["status"]["rto_state"] == "over"

    exported = drills.http.get("/trends/runs.csv").text
    for job in jobs:
        assert f",{job['id']},yes,loader · mysqldump (gzip)," in exported


def test_two_drills_of_a_database_never_run_at_once(drills: Stack, big_dump: Path) -> None:
    protected = protect(drills, name="shop big", backup_glob="big/*")
    first = drills.http.post(f"/protected-databases/{protected['id']}/drills").json()
    # A second drill queued behind the API's back (two schedulers racing, say): the worker still runs it after
    # the first, never beside it, though it has two free processes.
    with session_scope() as session:
        second = create_restore_job(
            session,
            RestoreJobCreate(backup_path=str(big_dump), target=SandboxTargetSpec(), capture="none"),
            get_settings(),
            None,
            started_by=DRILL_STARTED_BY,
        )
        second.parameters = {**second.parameters, "drill": {"protected_database_id": protected["id"], "name": "x"}}
        second_id = second.id
    enqueue_job("restore", second_id)
    a, b = drills.wait_until_done(first["job_id"], 240), drills.wait_until_done(second_id, 240)
    assert a["status"] == b["status"] == "succeeded", (a["error"], b["error"])
    # Either may have taken the lock first (two worker processes took the two messages at once); the other waited.
    earlier, later = sorted((a, b), key=lambda job: datetime.fromisoformat(job["started_at"]))
    assert datetime.fromisoformat(later["started_at"]) >= datetime.fromisoformat(earlier["finished_at"])
    waiting = f"waiting: another drill of this database is running (job {earlier['id']})"
    assert waiting in drills.log_messages(later["id"])


Received = tuple[dict[str, str], bytes]


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[Received]]]:
    port, received = free_port(), []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append((dict(self.headers.items()), self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/restorescope", received
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_scheduler_tells_a_failed_drill_once(
    drills: Stack, backup_root: Path, receiver: tuple[str, list[Received]]
) -> None:
    url, received = receiver
    folder = backup_root / "vanishing"
    folder.mkdir(exist_ok=True)
    shutil.copy(backup_root / "demo" / "shop.sql", folder / "shop.sql")
    protected = protect(
        drills, name="shop vanishing", backup_glob="vanishing/*", webhook_url=url, webhook_secret="it-secret"
    )
    assert drills.http.get("/backups").status_code == 200  # seen once, then gone
    (folder / "shop.sql").unlink()
    drill = drills.http.post(f"/protected-databases/{protected['id']}/drills").json()
    assert drill["status"] == "failed" and "is no longer on disk" in drill["error"]

    headers, body = wait("the webhook", lambda: next(iter(received), None), 60)
    time.sleep(3)  # a few more ticks: nothing more is sent
    assert len(received) == 1
    assert headers["X-Restorescope-Signature"] == "sha256=" + hmac.new(b"it-secret", body, hashlib.sha256).hexdigest()
    event = json.loads(body)
    assert event["event"] == "drill_failed" and event["details"]["error"] == drill["error"]
    listed = drills.http.get("/notifications", params={"protected_database_id": protected["id"]}).json()["data"]
    assert [(n["event"], n["status"], n["attempts"]) for n in listed] == [("drill_failed", "sent", 1)]
