"""Captured restores through the real stack: API -> worker -> sandbox, with strace, eBPF or FUSE recording every
thread's IO, read back through the trace API as the timeline reads it. These restores run the mysql client
(runner="mysql"), so the client's own process is traced too; the loader's capture is in test_loader_jobs.py."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.sandboxes.options import ServerOptions
from tests.integration.conftest import server_processes
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.mounts import mounts_under
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PAGE_SIZE = 16384


def _trace(stack: Stack, job_id: int) -> dict[str, Any]:
    response = stack.http.get(f"/jobs/{job_id}/trace")
    assert response.status_code == 200, response.text
    trace: dict[str, Any] = response.json()
    return trace


def _ibd_writes(stack: Stack, job_id: int) -> list[dict[str, Any]]:
    response = stack.http.get(
        f"/jobs/{job_id}/trace/operations", params={"kinds": "write", "path": ".ibd", "limit": 1000}
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _assert_captured_restore(stack: Stack, job: dict[str, Any], backend: str) -> dict[str, Any]:
    done = stack.wait_until_done(job["id"])
    assert done["status"] == "succeeded", done["error"]
    trace = _trace(stack, job["id"])
    assert trace["status"] == "complete" and trace["source"] == "capture" and trace["backend"] == backend
    assert trace["visibility"] and trace["operations"] > 0
    writes = _ibd_writes(stack, job["id"])
    assert writes, f"no page writes of .ibd files in the trace of a {backend} capture"
    for op in writes:
        assert op["offset"] % PAGE_SIZE == 0 and op["size"] % PAGE_SIZE == 0 and op["size"] > 0, op
    roles = {lane["tid"]: lane["role"] for lane in trace["lanes"]}
    assert {"main", "page cleaner"} <= set(roles.values()), roles
    assert all(op["tid"] in roles for op in writes)
    assert any(role.startswith("connection ") and "(mysql)" in role for role in roles.values()), roles
    return trace


def test_a_restore_is_captured_with_ebpf_by_default(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    job = live_worker.restore("demo/shop.sql", runner="mysql")
    trace = _assert_captured_restore(live_worker, job, "ebpf")
    assert trace["aio_mode"] == "io_uring" and trace["fallback_reason"] is None
    assert "io_uring" in trace["visibility"]
    assert trace["meta"]["lost_events"] == 0
    logs = live_worker.log_messages(job["id"])
    assert not any(m.startswith("AIO switched") for m in logs)
    _assert_sampled(live_worker, job["id"], trace, logs)


def _assert_sampled(stack: Stack, job_id: int, trace: dict[str, Any], logs: list[str]) -> None:
    """CPU per thread and the server's state share the IO's trace: the run page draws them on the same lanes."""
    tracks = {counter["track"] for counter in trace["counters"]}
    assert {"server.rows_inserted", "server.dirty_pages", "server.threads_running"} <= tracks, (tracks, logs)
    assert {"cpu.user", "cpu.iowait"} <= tracks, tracks
    window = stack.http.get(f"/jobs/{job_id}/trace/window", params={"width_px": 400}).json()
    cpu_spans = [span for lane in window["lanes"] for span in lane["spans"] if span["track"] == "cpu"]
    assert any(span["label"] == "running" for span in cpu_spans), cpu_spans[:5]
    summary = next(m for m in logs if m.startswith("sampling: "))
    assert "busiest threads: mariadbd" in summary and "% of a core" in summary, summary


def test_strace_capture_switches_aio_and_says_so(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    job = live_worker.restore("demo/shop.sql.zst", capture="strace", runner="mysql")
    trace = _assert_captured_restore(live_worker, job, "strace")
    assert trace["aio_mode"] == "aio"
    assert {op["op"] for op in _ibd_writes(live_worker, job["id"])} == {"io_submit"}
    logs = live_worker.log_messages(job["id"])
    assert any(m.startswith("AIO switched from io_uring to aio so strace can see page IO") for m in logs), logs
    variables = live_worker.http.get(f"/jobs/{job['id']}/server").json()["snapshots"][0]["variables"]
    assert variables["innodb_linux_aio"] == "aio" and variables["performance_schema"] == "ON"


def test_fuse_capture_sees_the_datadir_and_leaves_no_mount(
    live_worker: Stack, demo_dumps: dict[str, Path], work_root: Path
) -> None:
    job = live_worker.restore("demo/shop.sql", capture="fuse", runner="mysql")
    _assert_captured_restore(live_worker, job, "fuse")
    assert {op["op"] for op in _ibd_writes(live_worker, job["id"])} == {"write"}
    assert mounts_under(work_root) == []


def test_fuse_cancelled_mid_restore_leaves_no_stale_mount(live_worker: Stack, big_dump: Path, work_root: Path) -> None:
    job = live_worker.restore("big/shop.sql", capture="fuse")
    live_worker.wait_for(job["id"], lambda j: j["phase"] == "restoring" and int(j["bytes_done"]) > 0, timeout_s=120)
    assert mounts_under(work_root), "the FUSE capture should be mounted while the restore runs"
    live_worker.http.post(f"/jobs/{job['id']}/cancel")
    done = live_worker.wait_until_done(job["id"], timeout_s=60)
    assert done["status"] == "cancelled", done
    assert mounts_under(work_root) == []
    assert not Path(done["sandbox_dir"]).exists() and server_processes(done["sandbox_dir"]) == []
    # What was captured before the cancel stays readable, and says it is incomplete.
    assert _trace(live_worker, job["id"])["status"] == "failed"


@pytest.fixture
def worker_without_ebpf(stack: Stack) -> Any:
    """The stack with its worker replaced by one whose operator turned eBPF capture off."""
    if stack.worker is not None and stack.worker.poll() is None:
        stack.kill_worker()
    stack.start_worker({"RESTORESCOPE_CAPTURE_DISABLED": "ebpf"})
    yield stack
    stack.kill_worker()  # the next test's live_worker starts an ordinary one


def test_auto_falls_back_to_strace_with_the_reason(worker_without_ebpf: Stack, demo_dumps: dict[str, Path]) -> None:
    job = worker_without_ebpf.restore("demo/shop.sql", runner="mysql")
    trace = _assert_captured_restore(worker_without_ebpf, job, "strace")
    assert trace["fallback_reason"] == (
        "ebpf: ebpf capture is turned off on this worker (RESTORESCOPE_CAPTURE_DISABLED)"
    )
    logs = worker_without_ebpf.log_messages(job["id"])
    assert any(m.startswith("capture: strace instead of auto: ebpf: ebpf capture is turned off") for m in logs), logs

    explicit = worker_without_ebpf.restore("demo/shop.sql", capture="ebpf")
    failed = worker_without_ebpf.wait_until_done(explicit["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == (
        "capture with ebpf is not possible here: ebpf capture is turned off on this worker "
        "(RESTORESCOPE_CAPTURE_DISABLED)"
    )
    time.sleep(0.5)
    assert worker_without_ebpf.http.get(f"/jobs/{explicit['id']}/trace").status_code == 404


@pytest.fixture(scope="module")
def local_saved_server(work_root: Path) -> Iterator[Sandbox]:
    """A DBA's existing server that happens to run on the worker's host (performance_schema off, as by default)."""
    with Sandbox(
        work_root / "capture-saved", "target", ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _: None
    ) as sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE USER 'restore'@'localhost' IDENTIFIED BY 'Capture-Pa55word'")
            cursor.execute("GRANT ALL ON *.* TO 'restore'@'localhost'")
        yield sandbox


def test_a_local_saved_target_is_captured_as_it_is(
    live_worker: Stack, demo_dumps: dict[str, Path], local_saved_server: Sandbox
) -> None:
    response = live_worker.http.post(
        "/targets",
        json={
            "name": "capture-local",
            "socket": str(local_saved_server.socket_path),
            "user": "restore",
            "password": "Capture-Pa55word",
        },
    )
    assert response.status_code == 201, response.text
    job = live_worker.restore(
        "demo/shop.sql", target={"kind": "saved", "target_id": response.json()["id"]}, runner="mysql"
    )
    done = live_worker.wait_until_done(job["id"])
    assert done["status"] == "succeeded", done["error"]
    trace = _trace(live_worker, job["id"])
    # Its pid came from its pid file; its settings are left alone, and the trace says what that means.
    assert trace["backend"] == "ebpf" and trace["status"] == "complete" and trace["aio_mode"] == "io_uring"
    assert "io_uring" in trace["visibility"]
    server_pid = local_saved_server.pid
    assert any(lane["pid"] == server_pid for lane in trace["lanes"])
    assert any(lane["role"].startswith("mysql client") for lane in trace["lanes"])
    reads = live_worker.http.get(f"/jobs/{job['id']}/trace/operations", params={"kinds": "read", "limit": 5}).json()
    assert reads["total"] > 0
