"""A source server holding a small shop with awkward data and every kind of object, its dumps in every format
(real mysqldump, mysqldump --tab and mydumper 0.10; the test helpers for mydumper 1.x and MySQL Shell), and
a target server to restore into, emptied before each test."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql
import pytest
import zstandard

from app.sandboxes.options import ServerOptions
from tests.loader.layouts import objects_of, read_tab, write_mydumper_dump, write_mysqlsh_dump
from worker.process_group import ProcessGroup
from worker.runners.loader import LoaderOutcome, restore_with_loader
from worker.runners.mysql_client import RestoreProgress
from worker.sandbox.binary import detect_server_binary, find_tool
from worker.sandbox.server import Sandbox

SCHEMA = "shop"
TABLES = ["customers", "orders", "events_log", "nopk", "empty_table", "we@ird name", "counters"]
EVENTS_LOG_ROWS = 20_000
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")

SHOP = [
    "CREATE DATABASE shop CHARACTER SET utf8mb4",
    "USE shop",  # the seq_1_to_N tables of the SEQUENCE engine need a current database
    "CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(100), note TEXT NULL, "
    "latin VARCHAR(20) CHARACTER SET latin1, raw VARBINARY(16), KEY name_idx (name)) ENGINE=InnoDB",
    "CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer INT, amount DECIMAL(10,2), "
    "created TIMESTAMP NULL, KEY k_amount (amount), "
    "CONSTRAINT orders_customer FOREIGN KEY (customer) REFERENCES shop.customers (id)) ENGINE=InnoDB",
    "CREATE TABLE shop.events_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload VARCHAR(200), k INT, "
    "KEY k (k), FULLTEXT KEY ft (payload)) ENGINE=InnoDB",
    "CREATE TABLE shop.nopk (a INT, b VARCHAR(10)) ENGINE=InnoDB",
    "CREATE TABLE shop.empty_table (id INT PRIMARY KEY) ENGINE=InnoDB",
    "CREATE TABLE shop.`we@ird name` (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB",
    "CREATE TABLE shop.counters (id INT PRIMARY KEY, n INT) ENGINE=MyISAM",
    "INSERT INTO shop.customers SELECT seq, "
    "ELT(1 + seq % 7, 'O''Brien', 'a),(b', 'back\\\\slash', 'Zoë 😀', 'tab\\there', 'line\\nbreak;', 'semi;\\n'), "
    "IF(seq % 3 = 0, NULL, CONCAT('note ', seq, ' \"quoted\" (x)')), IF(seq % 2, 'Zoë', 'plain'), "
    "IF(seq % 5 = 0, NULL, UNHEX(CONCAT('00FF0A5C09', HEX(seq)))) FROM seq_1_to_1000",
    "INSERT INTO shop.orders (customer, amount, created) SELECT 1 + seq % 1000, seq / 3, "
    "FROM_UNIXTIME(1700000000 + seq) FROM seq_1_to_5000",
    f"INSERT INTO shop.events_log (payload, k) SELECT CONCAT('event ', seq, REPEAT(' x', seq % 40)), seq % 97 "
    f"FROM seq_1_to_{EVENTS_LOG_ROWS}",
    "INSERT INTO shop.nopk SELECT seq % 50, 'v' FROM seq_1_to_500",
    "INSERT INTO shop.`we@ird name` VALUES (1, 'one'), (2, 'two')",
    "INSERT INTO shop.counters SELECT seq, seq * 10 FROM seq_1_to_300",
    "CREATE FUNCTION double_it(x INT) RETURNS INT DETERMINISTIC RETURN x * 2",
    "CREATE VIEW big_orders AS SELECT id, double_it(customer) AS c2 FROM orders WHERE amount > 100",
    "CREATE VIEW top_big AS SELECT * FROM big_orders WHERE id < 1000",
    # Fires on every insert: rows restored with it in place would all differ, so it must come after the data.
    "CREATE TRIGGER orders_bi BEFORE INSERT ON orders FOR EACH ROW SET NEW.amount = NEW.amount + 1000",
    "CREATE PROCEDURE p1() SELECT COUNT(*) FROM orders",
    "CREATE EVENT e1 ON SCHEDULE EVERY 1 DAY DO DELETE FROM nopk",
]


@dataclass
class Server:
    sandbox: Sandbox

    def connect(self) -> pymysql.connections.Connection[Any]:
        return self.sandbox.connect()

    def query(self, sql: str, args: tuple[object, ...] | None = None) -> list[tuple[Any, ...]]:
        with self.connect() as connection, connection.cursor() as cursor:
            cursor.execute(sql, args)
            return list(cursor.fetchall())

    def run_all(self, statements: list[str]) -> None:
        with self.connect() as connection, connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)

    def client_args(self) -> list[str]:
        return ["--no-defaults", *self.sandbox.client_args()]

    def fingerprint(self, schema: str) -> dict[str, object]:
        """Every object of `schema`, and a checksum of every table's rows (order-independent)."""
        tables = self.query(
            "SELECT TABLE_NAME, TABLE_TYPE, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "ORDER BY TABLE_NAME",
            (schema,),
        )
        result: dict[str, object] = {"tables": tables}
        for name, kind, _engine in tables:
            if kind == "BASE TABLE":
                quoted = f"`{schema}`.`{name}`"
                result[f"rows {name}"] = self.query(f"SELECT COUNT(*) FROM {quoted}")[0][0]
                result[f"checksum {name}"] = self.query(f"CHECKSUM TABLE {quoted} EXTENDED")[0][1]
        result["indexes"] = self.query(
            "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, INDEX_TYPE FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s ORDER BY 1, 2, 3",
            (schema,),
        )
        result["triggers"] = self.query(
            "SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s",
            (schema,),
        )
        result["routines"] = self.query(
            "SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s ORDER BY 2",
            (schema,),
        )
        result["events"] = self.query(
            "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = %s", (schema,)
        )
        result["views"] = self.query(
            "SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA = %s ORDER BY 1",
            (schema,),
        )
        return result

    def reset(self) -> None:
        for (name,) in self.query("SHOW DATABASES"):
            if name not in SYSTEM_SCHEMAS:
                self.query(f"DROP DATABASE `{name}`")


def start_server(root: Path, name: str) -> Iterator[Server]:
    sandbox = Sandbox(root, name, ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _line: None)
    with sandbox:
        sandbox.start()
        yield Server(sandbox)


@pytest.fixture(scope="session")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    for server in start_server(tmp_path_factory.mktemp("servers"), "loader-source"):
        server.run_all(SHOP)
        yield server


@pytest.fixture(scope="session")
def target_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from start_server(tmp_path_factory.mktemp("servers"), "loader-target")


@pytest.fixture
def target(target_server: Server) -> Server:
    target_server.reset()
    return target_server


@dataclass
class Dumps:
    root: Path
    sql: Path
    sql_zst: Path
    sql_no_database: Path
    tab: Path
    mydumper_010: Path
    mydumper_1x: Path
    mydumper_1x_load_data: Path
    mydumper_1x_gzip: Path
    mysqlsh: Path
    extra: dict[str, Path] = field(default_factory=dict)


def _mysqldump(server: Server, out: Path, *args: str) -> None:
    with out.open("wb") as handle:
        subprocess.run(
            [
                find_tool(("mysqldump", "mariadb-dump")),
                *server.client_args(),
                "--routines",
                "--events",
                "--net-buffer-length=16384",
                *args,
            ],
            stdout=handle,
            check=True,
        )


def _mydumper(server: Server, out: Path) -> None:
    """mydumper 0.10 now and then hangs for good with all its threads asleep: give it a minute, then again."""
    for attempt in range(3):
        shutil.rmtree(out, ignore_errors=True)
        try:
            subprocess.run(
                [
                    "mydumper",
                    f"--socket={server.sandbox.socket_path}",
                    "--user=root",
                    f"--database={SCHEMA}",
                    f"--outputdir={out}",
                    "--rows=2000",
                    "--triggers",
                    "--events",
                    "--routines",
                    "--threads=2",
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
            return
        except subprocess.TimeoutExpired:
            if attempt == 2:
                raise


@pytest.fixture(scope="session")
def dumps(source: Server, tmp_path_factory: pytest.TempPathFactory) -> Dumps:
    root = tmp_path_factory.mktemp("dumps")
    sql = root / "shop.sql"
    _mysqldump(source, sql, "--databases", SCHEMA)
    sql_zst = root / "shop.sql.zst"
    sql_zst.write_bytes(zstandard.ZstdCompressor().compress(sql.read_bytes()))
    sql_no_database = root / "shop-tables.sql"
    # Tables only: MariaDB writes view definitions with the database name in them (`shop`.`orders`), so a
    # view cannot move to another database through mysqldump, whatever restores it.
    _mysqldump(source, sql_no_database, SCHEMA, *TABLES)
    tab = root / "shop-tab"
    tab.mkdir()
    # --tab writes tables and views into the directory and routines and events to standard output: a DBA
    # keeps that output next to the tables.
    _mysqldump(source, tab / "shop-routines.sql", f"--tab={tab}", SCHEMA)
    mydumper_010 = root / "shop-mydumper-0.10"
    _mydumper(source, mydumper_010)
    with source.connect() as connection:
        objects = objects_of(connection, SCHEMA)
    tables = read_tab(tab)
    mydumper_1x = root / "shop-mydumper-1x"
    write_mydumper_dump(mydumper_1x, SCHEMA, tables, objects, rows_per_chunk=3000)
    mydumper_1x_load_data = root / "shop-mydumper-1x-load-data"
    write_mydumper_dump(mydumper_1x_load_data, SCHEMA, tables, objects, rows_per_chunk=3000, load_data=True)
    mydumper_1x_gzip = root / "shop-mydumper-1x-gzip"
    write_mydumper_dump(mydumper_1x_gzip, SCHEMA, tables, objects, rows_per_chunk=3000, compression="gz")
    mysqlsh = root / "shop-mysqlsh"
    write_mysqlsh_dump(mysqlsh, SCHEMA, tables, objects, bytes_per_chunk=200_000)
    return Dumps(
        root,
        sql,
        sql_zst,
        sql_no_database,
        tab,
        mydumper_010,
        mydumper_1x,
        mydumper_1x_load_data,
        mydumper_1x_gzip,
        mysqlsh,
    )


def copy_dump(path: Path, into: Path) -> Path:
    """A copy the test may damage."""
    target = into / path.name
    if path.is_dir():
        shutil.copytree(path, target)
    else:
        shutil.copy2(path, target)
    return target


@dataclass
class Recorder:
    progress: list[RestoreProgress] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def restore(
    target: Server,
    dump: Path,
    *,
    database: str | None = None,
    threads: int = 2,
    chunk_size: int = 256 << 10,
    should_stop: Callable[[], bool] = lambda: False,
    recorder: Recorder | None = None,
) -> LoaderOutcome:
    recorder = recorder or Recorder()
    return restore_with_loader(
        dump,
        target.connect,
        None,
        recorder.progress.append,
        recorder.log.append,
        should_stop,
        database=database,
        threads=threads,
        chunk_size=chunk_size,
    )
