"""Cancel, a worker killed mid-restore, redelivered messages, and one restore per saved target."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from app.sandboxes.options import ServerOptions
from tests.integration.conftest import server_processes
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PASSWORD = "Rest0re-only-Pa55word"


def _restoring(job: dict[str, object]) -> bool:
    return job["phase"] == "restoring" and int(str(job["bytes_done"])) > 0


def test_cancel_mid_restore_kills_everything_and_removes_the_sandbox(live_worker: Stack, big_dump: Path) -> None:
    job = live_worker.restore("big/shop.sql")
    running = live_worker.wait_for(job["id"], _restoring, timeout_s=120)
    assert running["percent"] < 100
    response = live_worker.http.post(f"/jobs/{job['id']}/cancel")
    assert response.status_code == 200 and response.json()["cancel_requested"] is True
    done = live_worker.wait_until_done(job["id"], timeout_s=30)
    assert done["status"] == "cancelled", done
    assert "cancelled by user" in done["error"]
    assert not Path(done["sandbox_dir"]).exists()
    assert server_processes(done["sandbox_dir"]) == []


def test_worker_killed_mid_restore(live_worker: Stack, big_dump: Path, work_root: Path) -> None:
    job = live_worker.restore("big/shop.sql")
    running = live_worker.wait_for(job["id"], _restoring, timeout_s=120)
    sandbox_dir = running["sandbox_dir"]
    assert server_processes(sandbox_dir)
    killed_at = time.monotonic()
    live_worker.kill_worker()
    # The sandbox server dies with the worker (parent-death signal), not minutes later.
    deadline = time.monotonic() + 10
    while server_processes(sandbox_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server_processes(sandbox_dir) == []
    done = live_worker.wait_until_done(job["id"], timeout_s=60)
    assert time.monotonic() - killed_at < 60
    assert done["status"] == "failed"
    assert "stopped sending heartbeats" in done["error"] and "retry the job" in done["error"]
    # The API's sweep removes what the dead worker left on disk.
    deadline = time.monotonic() + 30
    while Path(sandbox_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(sandbox_dir).exists()

    retry = live_worker.http.post(f"/jobs/{job['id']}/retry").json()
    live_worker.start_worker()
    assert live_worker.wait_until_done(retry["id"])["status"] == "succeeded"


def test_redelivered_message_does_nothing(live_worker: Stack, demo_dumps: dict[str, Path], redis_server: str) -> None:
    job = live_worker.restore("demo/shop.sql")
    client = Celery(broker=redis_server)
    # A duplicate while it runs and another after it ended: neither may start a second restore.
    live_worker.wait_for(job["id"], lambda j: j["status"] == "running")
    client.send_task("restore.run", args=[job["id"]])
    done = live_worker.wait_until_done(job["id"])
    assert done["status"] == "succeeded"
    logs_before = live_worker.log_messages(job["id"])
    client.send_task("restore.run", args=[job["id"]])
    time.sleep(3)
    after = live_worker.job(job["id"])
    assert after["finished_at"] == done["finished_at"] and after["status"] == "succeeded"
    assert live_worker.log_messages(job["id"]) == logs_before
    assert sum(1 for m in logs_before if m.startswith("sandbox ") and " up on port " in m) == 1
    client.close()


@pytest.fixture(scope="module")
def saved_server(work_root: Path) -> Iterator[Sandbox]:
    """An existing server, as a DBA's target would be: a user with a password and no root access for us."""
    processes = ProcessGroup()
    sandbox = Sandbox(
        work_root / "saved", "target", ServerOptions(), detect_server_binary(), processes, lambda _line: None
    )
    with sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE USER 'restore'@'localhost' IDENTIFIED BY '{PASSWORD}'")
            cursor.execute("GRANT ALL ON *.* TO 'restore'@'localhost'")
        yield sandbox


def _save_target(stack: Stack, server: Sandbox, name: str, password: str) -> int:
    response = stack.http.post(
        "/targets", json={"name": name, "socket": str(server.socket_path), "user": "restore", "password": password}
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_saved_server_with_a_wrong_password(
    live_worker: Stack, demo_dumps: dict[str, Path], saved_server: Sandbox
) -> None:
    target_id = _save_target(live_worker, saved_server, "wrong-password", "not-the-password")
    job = live_worker.restore(
        "demo/shop-nodb.sql", database="shop_copy", target={"kind": "saved", "target_id": target_id}
    )
    done = live_worker.wait_until_done(job["id"])
    assert done["status"] == "failed"
    assert "refused user 'restore': wrong password or no such user" in done["error"]
    assert "edit the saved target's user and password" in done["error"]


def _command_lines() -> list[str]:
    lines = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                lines.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return lines


def test_one_restore_per_saved_target_at_a_time(
    live_worker: Stack, big_dump: Path, saved_server: Sandbox, work_root: Path
) -> None:
    target_id = _save_target(live_worker, saved_server, "shared-target", PASSWORD)
    first = live_worker.restore("big/shop.sql", target={"kind": "saved", "target_id": target_id})
    second = live_worker.restore("big/shop.sql", target={"kind": "saved", "target_id": target_id})
    both_running = False
    leaked = False
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        states = [live_worker.job(j["id"]) for j in (first, second)]
        both_running |= all(s["status"] == "running" for s in states)
        leaked |= any(PASSWORD in line for line in _command_lines())
        if all(s["status"] in ("succeeded", "failed", "cancelled") for s in states):
            break
        time.sleep(0.2)
    assert [s["status"] for s in states] == ["succeeded", "succeeded"], [s["error"] for s in states]
    assert not both_running
    assert not leaked, "the saved password appeared on a process command line"
    # Whichever job the worker picked first, the other one logged that it waited for it.
    waits = [
        (j["id"], other["id"])
        for j, other in ((first, second), (second, first))
        if any(
            m.startswith(f"waiting: the target is busy with job {other['id']}")
            for m in live_worker.log_messages(j["id"])
        )
    ]
    assert waits, "neither job waited for the other"
    assert all(v["ok"] for s in states for v in s["verification"])
    # The password file handed to the mysql client (in the job's own directory under the work root) is gone.
    assert not list(work_root.rglob("restorescope-*.cnf"))
