"""A real restore (the demo dump through the mysql client into a sandbox) captured by each backend.

What a DBA must see: the page writes of the .ibd files (page-aligned offsets, whole-page sizes) on
lanes named by role, the server's connection and the client's own lane, and the capture facts.
"""

import collections
import re
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from tests.capture.conftest import Recorder, assert_page_io
from worker.capture.selection import CapturePlan
from worker.capture.session import JobCapture
from worker.process_group import ProcessGroup
from worker.runners.mysql_client import restore_with_mysql_client
from worker.sandbox.binary import ServerBinary
from worker.sandbox.mounts import mounts_under
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration


def _captured_restore(
    backend: str,
    recorder: Recorder,
    dump: Path,
    binary: ServerBinary,
    work_root: Path,
    options: ServerOptions,
    *,
    kept: bool = False,
) -> list[str]:
    logs: list[str] = []
    processes = ProcessGroup()
    capture = JobCapture(recorder, CapturePlan(backend, backend), processes, logs.append)
    sandbox = Sandbox(
        work_root,
        f"capture-{backend}",
        capture.sandbox_options(options),
        binary,
        processes,
        logs.append,
        datadir_layer=capture.datadir_layer(),
        launcher=capture.server_launcher(kept=kept),
    )
    try:
        sandbox.start()
        capture.watch_server(sandbox.pid, sandbox.connect)
        seccomp = _status_field(sandbox.pid, "Seccomp")
        # The server the job starts runs under strace's seccomp filter (only IO calls stop it); a kept one
        # (it outlives the capture) is attached with -p.
        assert seccomp == ("2" if backend == "strace" and not kept else "0"), seccomp
        restore_with_mysql_client(
            dump,
            ["--no-defaults", *sandbox.client_args()],
            capture.client_popen(processes.popen),
            on_progress=lambda _progress: None,
            on_log=logs.append,
            should_stop=lambda: False,
        )
        with sandbox.connect() as connection, connection.cursor() as cursor:
            # Pages leave the buffer pool now rather than at some point of the shutdown.
            cursor.execute("FLUSH TABLES shop.orders, shop.order_items FOR EXPORT")
            cursor.execute("UNLOCK TABLES")
    finally:
        sandbox.remove()  # the shutdown's IO is part of the trace: the capture stops after it
        capture.stop()
        recorder.writer.close()
        processes.kill()
    assert capture.error is None, logs
    assert mounts_under(work_root) == []
    return logs


def _status_field(pid: int | None, field: str) -> str:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(line.split(":", 1)[1].strip() for line in lines if line.startswith(f"{field}:"))


@pytest.mark.parametrize(
    ("backend", "kept"),
    [("strace", False), ("strace", True), ("ebpf", False), ("fuse", False)],
    ids=["strace", "strace-attached", "ebpf", "fuse"],
)
def test_restore_page_writes_are_seen_on_named_lanes(
    backend: str, kept: bool, recorder: Recorder, small_demo_dump: Path, binary: ServerBinary, work_root: Path
) -> None:
    logs = _captured_restore(backend, recorder, small_demo_dump, binary, work_root, ServerOptions(), kept=kept)

    writes = recorder.ibd_writes()
    assert_page_io(writes, "page writes")
    assert {Path(op.path or "").name for op in writes} >= {"orders.ibd", "order_items.ibd"}
    roles = collections.Counter(recorder.role(op.tid) for op in writes)
    assert "(unnamed)" not in roles, roles
    all_roles = {lane.role for lane in recorder.lanes.values()}
    assert {"main", "page cleaner"} <= all_roles, all_roles
    assert any(role.startswith("connection ") and "(mysql)" in role for role in all_roles), all_roles

    meta = recorder.meta
    assert meta["backend"] == backend and meta["requested"] == backend and meta["visibility"]
    if backend == "strace":
        # strace cannot see io_uring: the job ran InnoDB on libaio and said so.
        assert meta["aio_mode"] == "aio"
        assert {op.op for op in writes} == {"io_submit"}
        assert any(line.startswith("AIO switched from io_uring to aio so strace can see page IO") for line in logs)
        switch = str(meta["aio_switch"])
        assert switch.startswith("AIO switched from io_uring to aio") and "changed restore time by" in switch
    elif backend == "ebpf":
        assert meta["aio_mode"] == "io_uring"
        assert {op.op for op in writes} <= {"io_uring_writev", "pwrite64"} and any(
            op.op == "io_uring_writev" for op in writes
        )
        assert meta["lost_events"] == 0
        assert not any(line.startswith("AIO switched") for line in logs)
    else:
        assert meta["aio_mode"] == "io_uring"
        assert {op.op for op in writes} == {"write"}
        assert all((op.path or "").startswith(str(work_root)) for op in writes)
    if backend != "fuse":
        # The client's own traffic: it reads the dump from its stdin and sends it to the server.
        client = [lane for lane in recorder.lanes.values() if lane.role.startswith("mysql client")]
        assert client and client[0].connection_id is not None, recorder.lanes
        client_tids = {lane.tid for lane in client}
        assert any(op.tid in client_tids and op.kind == "write" for op in recorder.operations)
        # Its stdin reads (the dump fed to it) are counted by eBPF and left out by strace, not recorded.
        stdin_reads = [op for op in recorder.operations if op.tid in client_tids and op.op == "read"]
        assert stdin_reads == [] if backend == "strace" else not any("pipe:" in (op.path or "") for op in stdin_reads)
        if backend == "strace":
            not_traced = re.compile(r"reads of (mysql|mariadb)'s standard input \(the dump\) are not traced")
            assert any(not_traced.search(line) for line in logs), logs
    summary = recorder.writer.summary
    assert summary.status == "complete"
