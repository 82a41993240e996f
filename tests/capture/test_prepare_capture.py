"""A real `mariabackup --prepare` captured by each backend: applying the redo log reads and writes the
pages of the .ibd files, and each backend must show those with their offsets and sizes.

The backup is taken while a client keeps inserting, so there is redo to apply. prepare ignores
--skip-innodb-use-native-aio but honours --innodb-linux-aio (FIELD-NOTES): strace gets libaio.
"""

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from tests.capture.conftest import Recorder, assert_page_io
from worker.capture.selection import CapturePlan, mariabackup_aio_options
from worker.capture.session import JobCapture
from worker.process_group import ProcessGroup
from worker.sandbox.binary import ServerBinary, find_tool
from worker.sandbox.mounts import mounts_under
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration


def _keep_inserting(sandbox: Sandbox, stop: threading.Event) -> None:
    with sandbox.connect("loaddb") as connection, connection.cursor() as cursor:
        batch = 0
        while not stop.is_set():
            cursor.execute("INSERT INTO t (k, pad) SELECT seq MOD 1000, REPEAT('x', 200) FROM seq_1_to_2000")
            cursor.execute(f"UPDATE t SET k = k + 1 WHERE id % 97 = {batch % 97}")
            batch += 1


@pytest.fixture(scope="module")
def backup_under_writes(work_root: Path, binary: ServerBinary) -> Iterator[Path]:
    """mariabackup --backup of a sandbox that was being written to while it ran."""
    target = work_root / "prepare-capture" / "backup"
    processes = ProcessGroup()
    with Sandbox(work_root / "prepare-capture", "source", ServerOptions(), binary, processes, lambda _: None) as source:
        source.start()
        with source.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE loaddb")
            cursor.execute(
                "CREATE TABLE loaddb.t (id INT AUTO_INCREMENT PRIMARY KEY, k INT, pad CHAR(200), KEY (k)) ENGINE=InnoDB"
            )
            cursor.execute("USE loaddb")
            cursor.execute("INSERT INTO t (k, pad) SELECT seq MOD 1000, REPEAT('y', 200) FROM seq_1_to_20000")
        stop = threading.Event()
        writer = threading.Thread(target=_keep_inserting, args=(source, stop))
        writer.start()
        try:
            subprocess.run(
                [
                    find_tool(("mariabackup", "mariadb-backup")),
                    "--no-defaults",
                    "--backup",
                    f"--target-dir={target}",
                    f"--socket={source.socket_path}",
                    "--user=root",
                    f"--datadir={source.datadir}",
                ],
                check=True,
                capture_output=True,
                timeout=300,
            )
        finally:
            stop.set()
            writer.join()
        processes.kill()
    yield target
    shutil.rmtree(work_root / "prepare-capture", ignore_errors=True)


def _prepare(backend: str, recorder: Recorder, backup: Path, work_root: Path) -> list[str]:
    copy = work_root / "prepare-capture" / f"prepare-{backend}"
    shutil.copytree(backup, copy)
    logs: list[str] = []
    processes = ProcessGroup()
    capture = JobCapture(recorder, CapturePlan(backend, backend), processes, logs.append)
    target = copy
    layer = capture.datadir_layer()
    try:
        if layer is not None:
            real = copy.with_name(copy.name + ".real")
            copy.rename(real)
            layer.attach(real, copy)
        capture.watch_server(None, None)
        command = [
            find_tool(("mariabackup", "mariadb-backup")),
            "--no-defaults",
            "--prepare",
            f"--target-dir={target}",
            *mariabackup_aio_options(backend),
        ]
        process = capture.client_popen(processes.popen)(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    finally:
        if layer is not None:
            layer.detach()
        capture.stop()
        recorder.writer.close()
        processes.kill()
    assert capture.error is None, logs
    assert mounts_under(work_root) == []
    return logs


@pytest.mark.parametrize("backend", ["strace", "ebpf", "fuse"])
def test_prepare_page_io_is_seen(backend: str, recorder: Recorder, backup_under_writes: Path, work_root: Path) -> None:
    _prepare(backend, recorder, backup_under_writes, work_root)

    writes = [op for op in recorder.ibd_writes() if op.path and op.path.endswith("loaddb/t.ibd")]
    assert_page_io(writes, "page writes")
    reads = [op for op in recorder.ibd_reads() if op.path and op.path.endswith("loaddb/t.ibd")]
    assert_page_io(reads, "page reads")
    # The lanes are mariabackup's threads, every operation on a named one.
    assert {lane.process for lane in recorder.lanes.values() if lane.role != "file system (no caller)"} == {
        "mariabackup"
    }
    roles = {recorder.role(op.tid) for op in writes}
    assert "(unnamed)" not in roles
    # How the page writes travelled: libaio for strace (the AIO option prepare honours), io_uring natively.
    expected = {"strace": "io_submit", "ebpf": "io_uring_writev", "fuse": "write"}[backend]
    assert expected in {op.op for op in writes}, {op.op for op in writes}
