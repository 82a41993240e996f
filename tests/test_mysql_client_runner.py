"""restore_with_mysql_client against a real scratch mariadbd started for this module."""

from __future__ import annotations

import gzip
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest
import zstandard

from worker.runners.dump_stream import TruncatedDumpError
from worker.runners.mysql_client import (
    ClientConnectError,
    RestoreCancelled,
    RestoreOutcome,
    RestoreProgress,
    SqlError,
    restore_with_mysql_client,
)

# No skip when mariadbd is missing: `make test` installs it, so its absence is a set-up bug to see.
pytestmark = pytest.mark.integration


@dataclass
class ScratchServer:
    socket: Path

    def client_args(self) -> list[str]:
        return ["--no-defaults", f"--socket={self.socket}", "--user=root"]

    def query(self, sql: str, database: str | None = None) -> list[tuple[Any, ...]]:
        connection = pymysql.connect(unix_socket=str(self.socket), user="root", database=database, autocommit=True)
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql)
                return list(cursor.fetchall())
        finally:
            connection.close()

    def count_rows(self, database: str, table: str) -> int:
        return int(self.query(f"SELECT COUNT(*) FROM `{database}`.`{table}`")[0][0])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScratchServer]:
    base = tmp_path_factory.mktemp("mariadb")
    datadir = base / "data"
    subprocess.run(
        [
            "mariadb-install-db",
            "--no-defaults",
            "--user=root",
            f"--datadir={datadir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ],
        check=True,
        capture_output=True,
    )
    socket = base / "mysqld.sock"
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    process = subprocess.Popen(
        [
            mariadbd,
            "--no-defaults",
            "--user=root",
            f"--datadir={datadir}",
            f"--socket={socket}",
            "--skip-networking",
            f"--pid-file={base / 'mariadbd.pid'}",
            f"--log-error={base / 'error.log'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_until_ready(socket, process, base / "error.log")
        yield ScratchServer(socket)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_ready(socket: Path, process: subprocess.Popen[bytes], error_log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"mariadbd exited: {error_log.read_text(errors='replace')[-2000:]}")
        ping = subprocess.run(
            ["mariadb-admin", "--no-defaults", f"--socket={socket}", "--user=root", "ping"], capture_output=True
        )
        if ping.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("mariadbd did not start within 60 s")


@pytest.fixture(scope="module")
def source_dump(server: ScratchServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real mysqldump (no --databases, so no USE) of tables with awkward strings, NULLs and a view."""
    server.query("CREATE DATABASE src CHARACTER SET utf8mb4")
    server.query("CREATE TABLE src.people (id INT PRIMARY KEY, name VARCHAR(100), note TEXT NULL)")
    server.query("CREATE TABLE src.orders (id INT PRIMARY KEY, person INT, amount DECIMAL(10,2))")
    server.query("CREATE TABLE src.empty_table (id INT)")
    server.query(
        "INSERT INTO src.people SELECT seq, "
        "ELT(1 + seq % 5, 'O''Brien', 'a),(b', 'back\\\\slash', 'Zoë 😀 ünïcode', 'line\\nbreak;'), "
        "IF(seq % 3 = 0, NULL, CONCAT('note ', seq, ' it''s (fine)')) FROM seq_1_to_3000",
        database="src",  # the seq_ tables of the SEQUENCE engine need a current database
    )
    server.query("INSERT INTO src.orders SELECT seq, seq % 3000, seq / 7 FROM seq_1_to_5000", database="src")
    server.query("CREATE VIEW src.rich_people AS SELECT * FROM src.people WHERE id > 10")
    path = tmp_path_factory.mktemp("dumps") / "src.sql"
    with path.open("wb") as out:
        subprocess.run(
            [
                "mysqldump",
                "--no-defaults",
                f"--socket={server.socket}",
                "--user=root",
                "--net-buffer-length=16384",
                "src",
            ],
            stdout=out,
            check=True,
        )
    return path


@dataclass
class Recorder:
    progress: list[RestoreProgress]
    log: list[str]
    processes: list[subprocess.Popen[bytes]]

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        process: subprocess.Popen[bytes] = subprocess.Popen(args, **kwargs)
        self.processes.append(process)
        return process


@pytest.fixture
def recorder() -> Recorder:
    return Recorder([], [], [])


def restore(
    server: ScratchServer,
    dump: Path,
    recorder: Recorder,
    database: str | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    client_args: list[str] | None = None,
) -> RestoreOutcome:
    return restore_with_mysql_client(
        dump,
        client_args or server.client_args(),
        popen=recorder.popen,
        on_progress=recorder.progress.append,
        on_log=recorder.log.append,
        should_stop=should_stop,
        database=database,
    )


def test_restore_into_new_database_matches_real_counts(
    server: ScratchServer, source_dump: Path, recorder: Recorder, tmp_path: Path
) -> None:
    compressed = tmp_path / "src.sql.gz"
    compressed.write_bytes(gzip.compress(source_dump.read_bytes()))

    outcome = restore(server, compressed, recorder, database="restored")

    assert outcome.expected_rows == {
        ("restored", "people"): 3000,
        ("restored", "orders"): 5000,
        ("restored", "empty_table"): 0,
    }
    for (database, table), expected in outcome.expected_rows.items():
        assert database is not None
        assert server.count_rows(database, table) == expected
    assert server.query("SELECT name FROM restored.people WHERE id = 1") == server.query(
        "SELECT name FROM src.people WHERE id = 1"
    )
    assert server.query("SELECT COUNT(*) FROM restored.rich_people") == [(2990,)]
    assert outcome.databases == ["restored"]
    assert not outcome.has_use_statements
    last = recorder.progress[-1]
    assert (last.bytes_done, last.bytes_total, last.rows_done) == (compressed.stat().st_size,) * 2 + (8000,)


def test_syntax_error_reports_dump_line_and_keeps_earlier_statements(
    server: ScratchServer, recorder: Recorder, tmp_path: Path
) -> None:
    dump = tmp_path / "broken.sql"
    dump.write_text(
        "CREATE TABLE t (a INT);\n"
        "INSERT INTO t VALUES (1),(2);\n"
        "INSERT INTO t VALUES (3);\n"
        "INSERT INTO t VALUES (4,;\n"  # line 4
        "INSERT INTO t VALUES (5);\n"
    )
    with pytest.raises(SqlError) as caught:
        restore(server, dump, recorder, database="broken")  # the prelude must not shift the line number
    assert caught.value.line == 4
    assert caught.value.client_error.startswith("ERROR 1064 (42000) at line 6:")  # the client's own count
    assert str(caught.value).startswith("the server rejected the statement at line 4 of the dump: ERROR 1064 (42000)")
    assert str(caught.value).endswith("; the dump is damaged or was made for another server version")
    assert server.query("SELECT a FROM broken.t ORDER BY a") == [(1,), (2,), (3,)]
    assert any("ERROR 1064" in line for line in recorder.log)


def test_wrong_password_is_a_connect_error(server: ScratchServer, recorder: Recorder, tmp_path: Path) -> None:
    server.query("CREATE USER IF NOT EXISTS 'app'@'localhost' IDENTIFIED BY 'right-password'")
    options = tmp_path / "client.cnf"
    options.touch(mode=0o600)
    options.write_text(f"[client]\nuser=app\npassword=wrong-password\nsocket={server.socket}\n")
    dump = tmp_path / "tiny.sql"
    dump.write_text("SELECT 1;\n")

    with pytest.raises(ClientConnectError) as caught:
        restore(server, dump, recorder, client_args=[f"--defaults-file={options}"])

    assert "ERROR 1045 (28000): Access denied for user 'app'@'localhost'" in str(caught.value)
    assert str(caught.value).endswith("check the saved target's host, port, user and password")
    assert "wrong-password" not in " ".join(recorder.processes[0].args)  # type: ignore[arg-type]


def test_unreachable_server_is_a_connect_error(recorder: Recorder, tmp_path: Path) -> None:
    dump = tmp_path / "tiny.sql"
    dump.write_text("SELECT 1;\n")
    with pytest.raises(ClientConnectError, match=r"ERROR 2002 \(HY000\): Can't connect"):
        restore_with_mysql_client(
            dump,
            ["--no-defaults", f"--socket={tmp_path / 'nobody-here.sock'}", "--user=root"],
            popen=recorder.popen,
            on_progress=recorder.progress.append,
            on_log=recorder.log.append,
            should_stop=lambda: False,
        )


def big_dump(path: Path, megabytes: int) -> Path:
    rows = ",".join(f"({i},'{'x' * 80}')" for i in range(10_000))
    statement = f"INSERT INTO big VALUES {rows};\n".encode()
    with path.open("wb") as out:
        out.write(b"CREATE TABLE big (a INT, b VARCHAR(100));\n")
        for _ in range(megabytes * (1 << 20) // len(statement) + 1):
            out.write(statement)
    return path


def test_should_stop_kills_the_client(server: ScratchServer, recorder: Recorder, tmp_path: Path) -> None:
    dump = big_dump(tmp_path / "big.sql", 8)
    calls = 0

    def stop_after_a_few_chunks() -> bool:
        nonlocal calls
        calls += 1
        return calls > 20

    with pytest.raises(RestoreCancelled):
        restore(server, dump, recorder, database="cancelled", should_stop=stop_after_a_few_chunks)

    (process,) = recorder.processes
    assert process.returncode == -signal.SIGKILL
    assert 0 < server.count_rows("cancelled", "big") < 8 * 10_000


def test_truncated_zstd_dump_stops_the_restore(server: ScratchServer, recorder: Recorder, tmp_path: Path) -> None:
    compressed = zstandard.ZstdCompressor().compress(big_dump(tmp_path / "big.sql", 3).read_bytes())
    dump = tmp_path / "big.sql.zst"
    dump.write_bytes(compressed[: len(compressed) * 2 // 3])

    with pytest.raises(TruncatedDumpError, match="ends before the end of its zstd stream"):
        restore(server, dump, recorder, database="truncated")

    (process,) = recorder.processes
    assert process.returncode is not None
