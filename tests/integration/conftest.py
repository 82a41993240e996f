"""The real stack for integration tests: an API process (uvicorn), a Celery worker process, the private Redis
of the session, sandbox MariaDB servers, and dumps made by mysqldump from a real server."""

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from tests.conftest import TEST_ROOT
from tests.stack import REPO, Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary, find_tool
from worker.sandbox.server import Sandbox


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    # The scheduler ticks every second when a test starts Celery beat (Stack.start_beat).
    running = Stack(TEST_ROOT / "logs", {"RESTORESCOPE_SWEEP_INTERVAL_S": "2", "RESTORESCOPE_DRILL_TICK_S": "1"})
    try:
        running.start_api()
        # As an admin, who may do everything: who may do what is tested in tests/api.
        running.log_in_as_admin()
        running.start_worker()
        yield running
    finally:
        running.stop()


@pytest.fixture
def live_worker(stack: Stack) -> Stack:
    """The stack with a worker running (a test before may have killed it)."""
    if stack.worker is None or stack.worker.poll() is not None:
        stack.start_worker()
    return stack


@pytest.fixture(scope="session")
def demo_dumps(backup_root: Path, work_root: Path) -> dict[str, Path]:
    from worker.demo import make_demo_dumps

    folder = backup_root / "demo"
    paths = make_demo_dumps(folder, work_root / "make-demo", rows=3000, log=lambda _line: None)
    return {path.name: path for path in paths}


@pytest.fixture(scope="session")
def big_dump(backup_root: Path, work_root: Path) -> Path:
    """A dump that takes several seconds to restore, so a test can act while it runs."""
    folder = backup_root / "big"
    subprocess.run(
        [sys.executable, "-m", "worker.demo", str(folder), "--rows", "1000", "--big"],
        check=True,
        env={**os.environ, "PYTHONPATH": f"{REPO / 'backend'}:{REPO}"},
        cwd=REPO,
        capture_output=True,
    )
    return folder / "shop.sql"


def sandbox_dirs(work_root: Path) -> list[Path]:
    return sorted(p for p in work_root.glob("job-*") if p.is_dir())


def server_processes(marker: str) -> list[int]:
    """Pids of mariadbd processes whose command line mentions marker (a sandbox's directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "mariadbd" in cmdline and marker in cmdline:
            found.append(int(proc.name))
    return found


# A physical backup of a server written to while it was taken (shared by the physical restore and advisor tests).
FIXED_ROWS = 3000
MYISAM_ROWS = 200
T_START_ROWS = 30_000
T_BATCH_ROWS = 2000


def _keep_writing(sandbox: Sandbox, connected: threading.Event, stop: threading.Event) -> None:
    with sandbox.connect("shop") as connection, connection.cursor() as cursor:
        connected.set()
        while not stop.is_set():
            cursor.execute(f"INSERT INTO t (k, pad) SELECT seq MOD 1000, REPEAT('x', 200) FROM seq_1_to_{T_BATCH_ROWS}")


@pytest.fixture(scope="session")
def physical_backup(backup_root: Path, work_root: Path) -> Iterator[Path]:
    """backup_root/physical/shop: a mariabackup directory of a server holding shop.t (written to during the
    backup), shop.fixed (InnoDB) and shop.counters (MyISAM)."""
    folder = backup_root / "physical"
    target = folder / "shop"
    folder.mkdir(parents=True, exist_ok=True)
    processes = ProcessGroup()
    with Sandbox(
        work_root / "physical-source", "source", ServerOptions(), detect_server_binary(), processes, lambda _: None
    ) as source:
        source.start()
        with source.connect() as admin, admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE shop")
            cursor.execute("USE shop")
            cursor.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k INT, pad CHAR(200), KEY (k))")
            cursor.execute("CREATE TABLE fixed (id INT PRIMARY KEY, v VARCHAR(50)) ENGINE=InnoDB")
            cursor.execute("CREATE TABLE counters (id INT PRIMARY KEY, n INT) ENGINE=MyISAM")
            # Redo written before the backup is in it too: enough for several recovery batches with 8M.
            cursor.execute(f"INSERT INTO t (k, pad) SELECT seq MOD 1000, REPEAT('y', 200) FROM seq_1_to_{T_START_ROWS}")
            cursor.execute(f"INSERT INTO fixed SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{FIXED_ROWS}")
            cursor.execute(f"INSERT INTO counters SELECT seq, seq * 10 FROM seq_1_to_{MYISAM_ROWS}")
        connected, stop = threading.Event(), threading.Event()
        writer = threading.Thread(target=_keep_writing, args=(source, connected, stop))
        writer.start()
        assert connected.wait(timeout=30)
        try:
            made = subprocess.run(
                [
                    find_tool(("mariabackup", "mariadb-backup")),
                    "--no-defaults",
                    "--backup",
                    "--user=root",
                    f"--target-dir={target}",
                    f"--socket={source.socket_path}",
                    f"--datadir={source.datadir}",
                ],
                capture_output=True,
                timeout=300,
            )
            assert made.returncode == 0, made.stderr.decode(errors="replace")[-3000:]
        finally:
            stop.set()
            writer.join()
    yield target
    shutil.rmtree(folder, ignore_errors=True)
