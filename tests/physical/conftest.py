"""A real mariabackup --backup of a sandbox that was being written to while it ran (so prepare has redo to
apply), and what the source held: `fixed` was not written during the backup, so its count is exact; `t`
took 2000-row INSERTs, so the backup holds its starting rows plus a whole number of those. The source's root
has a password by the time of the backup, so the restored grant tables hold one restorescope does not know."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from worker.process_group import ProcessGroup
from worker.sandbox.binary import ServerBinary, detect_server_binary, find_tool
from worker.sandbox.server import Sandbox

FIXED_ROWS = 5000
MYISAM_ROWS = 300
T_START_ROWS = 40_000
T_BATCH_ROWS = 2000
SOURCE_ROOT_PASSWORD = "source-only-secret"


@dataclass(frozen=True)
class SourceBackup:
    path: Path
    t_rows_after: int  # rows of `t` on the source once the backup had finished

    def t_counts_possible(self) -> set[int]:
        """What a consistent restore of `t` may hold: the starting rows plus whole INSERTs."""
        return set(range(T_START_ROWS, self.t_rows_after + 1, T_BATCH_ROWS))


@pytest.fixture(scope="session")
def binary() -> ServerBinary:
    return detect_server_binary()


def _keep_writing(sandbox: Sandbox, connected: threading.Event, stop: threading.Event) -> None:
    with sandbox.connect("loaddb") as connection, connection.cursor() as cursor:
        connected.set()
        batch = 0
        while not stop.is_set():
            cursor.execute(f"INSERT INTO t (k, pad) SELECT seq MOD 1000, REPEAT('x', 200) FROM seq_1_to_{T_BATCH_ROWS}")
            cursor.execute(f"UPDATE t SET k = k + 1 WHERE id % 97 = {batch % 97}")
            batch += 1


@pytest.fixture(scope="session")
def source_backup(work_root: Path, binary: ServerBinary) -> Iterator[SourceBackup]:
    root = work_root / "physical-source"
    target = root / "backup"
    processes = ProcessGroup()
    with Sandbox(root, "source", ServerOptions(), binary, processes, lambda _: None) as source:
        source.start()
        admin = source.connect()
        with admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE loaddb")
            cursor.execute("USE loaddb")
            cursor.execute(
                "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k INT, pad CHAR(200), KEY (k)) ENGINE=InnoDB"
            )
            cursor.execute("CREATE TABLE fixed (id INT PRIMARY KEY, v VARCHAR(50)) ENGINE=InnoDB")
            # Redo written before the backup starts is in it too (the backup copies from the last checkpoint):
            # enough to need several recovery batches with a small --use-memory.
            cursor.execute(f"INSERT INTO t (k, pad) SELECT seq MOD 1000, REPEAT('y', 200) FROM seq_1_to_{T_START_ROWS}")
            cursor.execute(f"INSERT INTO fixed SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{FIXED_ROWS}")
            # Not InnoDB: copied under the backup's lock instead of through the redo log.
            cursor.execute("CREATE TABLE counters (id INT PRIMARY KEY, n INT) ENGINE=MyISAM")
            cursor.execute(f"INSERT INTO counters SELECT seq, seq * 10 FROM seq_1_to_{MYISAM_ROWS}")
        connected, stop = threading.Event(), threading.Event()
        writer = threading.Thread(target=_keep_writing, args=(source, connected, stop))
        writer.start()
        assert connected.wait(timeout=30)
        # Like a production server, the source's root has a password, which the restore does not know.
        with admin.cursor() as cursor:
            cursor.execute(f"ALTER USER root@localhost IDENTIFIED BY '{SOURCE_ROOT_PASSWORD}'")
        credentials = root / "backup.cnf"
        credentials.write_text(f"[mariabackup]\nuser=root\npassword={SOURCE_ROOT_PASSWORD}\n")
        credentials.chmod(0o600)
        try:
            subprocess.run(
                [
                    find_tool(("mariabackup", "mariadb-backup")),
                    f"--defaults-file={credentials}",
                    "--backup",
                    f"--target-dir={target}",
                    f"--socket={source.socket_path}",
                    f"--datadir={source.datadir}",
                ],
                check=True,
                capture_output=True,
                timeout=300,
            )
        finally:
            stop.set()
            writer.join()
        with admin, admin.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM loaddb.t")
            t_rows_after = int(cursor.fetchone()[0])
        processes.kill()
    yield SourceBackup(target, t_rows_after)
    shutil.rmtree(root, ignore_errors=True)


def copy_of(backup: Path, into: Path) -> Path:
    """A copy of the backup a test may damage."""
    copy = into / "backup-copy"
    shutil.copytree(backup, copy)
    return copy
