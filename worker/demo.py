"""Make demo backups to restore: a small `shop` database dumped with mysqldump, plain and compressed, and on
request (--directories) as a mysqldump --tab directory and a mydumper directory, and (--physical) a mariabackup
directory of the whole demo server, made by the real tools.

The data is made inside a throwaway sandbox with MariaDB's sequence engine (`seq_1_to_N`), so it is
quick and the same every time. Some values exist only to trip up dump parsers: quotes, backslashes,
unicode, NULLs, line breaks and a string containing "),(" (the separator of extended INSERTs).

    python -m worker.demo DEST [--rows N] [--big] [--directories] [--physical]
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import zstandard

from app.sandboxes.options import ServerOptions
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary, find_tool
from worker.sandbox.server import Sandbox, SandboxError

DATABASE = "shop"
BIG_TABLE_ROWS = 300_000

_SCHEMA = [
    """CREATE TABLE customers (
        id INT UNSIGNED NOT NULL PRIMARY KEY,
        name VARCHAR(100) NOT NULL,
        email VARCHAR(150) NOT NULL UNIQUE,
        city VARCHAR(60) NULL,
        created_at DATETIME NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE products (
        id INT UNSIGNED NOT NULL PRIMARY KEY,
        sku CHAR(12) NOT NULL UNIQUE,
        name VARCHAR(200) NOT NULL,
        price DECIMAL(10,2) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE orders (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        customer_id INT UNSIGNED NOT NULL,
        status ENUM('new','paid','shipped','cancelled') NOT NULL,
        ordered_at DATETIME NOT NULL,
        KEY ordered_at (ordered_at),
        CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE order_items (
        order_id INT UNSIGNED NOT NULL,
        line TINYINT UNSIGNED NOT NULL,
        product_id INT UNSIGNED NOT NULL,
        quantity SMALLINT UNSIGNED NOT NULL,
        unit_price DECIMAL(10,2) NOT NULL,
        PRIMARY KEY (order_id, line),
        CONSTRAINT order_items_order FOREIGN KEY (order_id) REFERENCES orders (id),
        CONSTRAINT order_items_product FOREIGN KEY (product_id) REFERENCES products (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    # Empty on purpose: a dump with a table and no INSERT for it.
    """CREATE TABLE `returns` (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        order_id INT UNSIGNED NOT NULL,
        reason TEXT NULL,
        CONSTRAINT returns_order FOREIGN KEY (order_id) REFERENCES orders (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE notes (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        customer_id INT UNSIGNED NULL,
        body TEXT NULL,
        rating TINYINT NULL,
        raw VARBINARY(16) NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    """CREATE VIEW order_totals AS
        SELECT order_id, SUM(quantity * unit_price) AS total FROM order_items GROUP BY order_id""",
    """CREATE TRIGGER returns_reason BEFORE INSERT ON `returns` FOR EACH ROW
        SET NEW.reason = COALESCE(NEW.reason, 'no reason given')""",
    """CREATE PROCEDURE customer_orders(IN wanted INT UNSIGNED)
        SELECT * FROM orders WHERE customer_id = wanted ORDER BY ordered_at""",
]

# Values that break naive dump parsers; %s placeholders are filled by PyMySQL, escaping them properly.
_TRICKY_NOTES: list[tuple[int | None, str | None, int | None, bytes | None]] = [
    (1, 'it\'s a "quoted" note', 5, None),
    (2, "back\\slash and \\n that is not a line break", None, b"\x00\x01'\\"),
    (None, "real line\nbreak and a\ttab", 3, None),
    (3, "values),(look like a row separator", -1, None),
    (4, "'),('; DROP TABLE customers; --", 0, b"),("),
    (5, "unicode: ünïcødé, 日本語, emoji 🐬", 4, None),
    (None, None, None, None),
    (6, "", 2, b""),
]


def _fill_statements(rows: int) -> list[str]:
    products = max(rows // 10, 10)
    return [
        f"""INSERT INTO customers SELECT seq, CONCAT('Customer ', seq), CONCAT('customer', seq, '@example.com'),
            IF(seq % 7 = 0, NULL, ELT(1 + seq % 5, 'Lisboa', 'Zürich', 'O''Fallon', 'Kraków', 'Québec')),
            '2024-01-01' + INTERVAL seq MINUTE FROM seq_1_to_{rows}""",
        f"""INSERT INTO products SELECT seq, CONCAT('SKU-', LPAD(seq, 8, '0')),
            CONCAT('Product ', seq, IF(seq % 3 = 0, ' 12" \\\\ "deluxe"', '')), ROUND(1 + (seq * 37 % 10000) / 100, 2)
            FROM seq_1_to_{products}""",
        f"""INSERT INTO orders SELECT seq, 1 + (seq * 31) % {rows},
            ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'cancelled'), '2024-02-01' + INTERVAL seq * 3 MINUTE
            FROM seq_1_to_{rows}""",
        f"""INSERT INTO order_items SELECT o.seq, l.seq, 1 + (o.seq * 13 + l.seq) % {products}, 1 + (o.seq + l.seq) % 5,
            ROUND(1 + ((o.seq + l.seq) * 37 % 10000) / 100, 2) FROM seq_1_to_{rows} o JOIN seq_1_to_3 l""",
    ]


_BIG_TABLE_SCHEMA = """CREATE TABLE sbtest1 (
    id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    k INT UNSIGNED NOT NULL DEFAULT 0,
    c CHAR(120) NOT NULL DEFAULT '',
    pad CHAR(60) NOT NULL DEFAULT '',
    KEY k_1 (k)
) ENGINE=InnoDB"""


def _digit_groups(multipliers: range) -> str:
    """SQL for sysbench-like text: groups of 11 pseudo-random digits joined by '-'."""
    groups = ", ".join(f"LPAD((seq * {multiplier}) % 99999999977, 11, '0')" for multiplier in multipliers)
    return f"CONCAT_WS('-', {groups})"


def _big_table_statements() -> list[str]:
    # c holds 10 groups (119 characters) and pad 5 (59), as sysbench's oltp tables do.
    fill = f"""INSERT INTO sbtest1 SELECT seq, (seq * 2654435761) % {BIG_TABLE_ROWS} + 1,
        {_digit_groups(range(1000003, 1000013))}, {_digit_groups(range(2000003, 2000008))}
        FROM seq_1_to_{BIG_TABLE_ROWS}"""
    return [_BIG_TABLE_SCHEMA, fill]


ROW_COUNTS_FILE = "row-counts.txt"


def make_demo_dumps(
    dest_dir: Path,
    work_root: Path,
    rows: int = 5000,
    log: Callable[[str], None] = print,
    *,
    big: bool = False,
    directories: bool = False,
    physical: bool = False,
) -> list[Path]:
    """Dump a freshly made `shop` database into dest_dir: .sql, .sql.gz, .sql.zst and -nodb.sql; with
    `directories`, also shop-tab/ (mysqldump --tab) and shop-mydumper/ (mydumper); with `physical`,
    shop-mariabackup/ (mariabackup --backup of the demo server)."""
    if rows < 10:
        raise ValueError(f"rows must be at least 10 to give every table some data, not {rows}")
    dest_dir.mkdir(parents=True, exist_ok=True)
    processes = ProcessGroup()
    layouts: list[Path] = []
    sandbox = Sandbox(work_root, f"demo-{os.getpid()}", ServerOptions(), detect_server_binary(), processes, log)
    with sandbox:
        sandbox.start()
        _create_shop(sandbox, rows, big, log)
        plain = dest_dir / f"{DATABASE}.sql"
        without_database = dest_dir / f"{DATABASE}-nodb.sql"
        _dump(sandbox, processes, plain, ["--databases", DATABASE])
        _dump(sandbox, processes, without_database, [DATABASE])
        if directories:
            layouts.append(_tab_dump(sandbox, processes, dest_dir / f"{DATABASE}-tab"))
            layouts.append(_mydumper_dump(sandbox, processes, dest_dir / f"{DATABASE}-mydumper"))
        if physical:
            layouts.append(_physical_backup(sandbox, processes, dest_dir / f"{DATABASE}-mariabackup"))
        _write_row_counts(sandbox, dest_dir / ROW_COUNTS_FILE)
    paths = [plain, _gzip_copy(plain), _zstd_copy(plain), without_database, *layouts]
    log("demo dumps written: " + ", ".join(str(path) for path in paths))
    return paths


def _write_row_counts(sandbox: Sandbox, target: Path) -> None:
    """Rows per table as the source server counts them: what a restore of these dumps must give back."""
    connection = sandbox.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = %s AND table_type = 'BASE TABLE'",
                (DATABASE,),
            )
            tables = sorted(str(row[0]) for row in cursor.fetchall())
            lines = []
            for table in tables:
                cursor.execute(f"SELECT COUNT(*) FROM `{DATABASE}`.`{table}`")
                row = cursor.fetchone()
                lines.append(f"{DATABASE}.{table} {row[0] if row else 0}")
    finally:
        connection.close()
    target.write_text("\n".join(lines) + "\n")


def _create_shop(sandbox: Sandbox, rows: int, big: bool, log: Callable[[str], None]) -> None:
    log(f"creating database {DATABASE} with {rows} customers" + (f" and {BIG_TABLE_ROWS} sbtest1 rows" if big else ""))
    connection = sandbox.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4")
            cursor.execute(f"USE {DATABASE}")
            for statement in [*_SCHEMA, *_fill_statements(rows), *(_big_table_statements() if big else [])]:
                cursor.execute(statement)
            cursor.executemany(
                "INSERT INTO notes (customer_id, body, rating, raw) VALUES (%s, %s, %s, %s)", _TRICKY_NOTES
            )
    finally:
        connection.close()


def _dump(sandbox: Sandbox, processes: ProcessGroup, target: Path, what: list[str]) -> None:
    mysqldump = find_tool(("mysqldump", "mariadb-dump"))
    command = [
        mysqldump,
        "--no-defaults",
        *sandbox.client_args(),
        "--single-transaction",
        "--routines",
        "--triggers",
        "--events",
        *what,
    ]
    with target.open("wb") as output:
        process = processes.popen(command, stdout=output, stderr=subprocess.PIPE)
        _, stderr = process.communicate()
    if process.returncode != 0:
        raise SandboxError(
            f"mysqldump of the demo database failed (exit code {process.returncode}): {stderr.decode().strip()}"
        )


def _tab_dump(sandbox: Sandbox, processes: ProcessGroup, target: Path) -> Path:
    """mysqldump --tab: the server writes table.txt, mysqldump table.sql; routines and events go to standard
    output, which a DBA keeps next to the tables (shop-routines.sql)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    _dump(sandbox, processes, target / f"{DATABASE}-routines.sql", [f"--tab={target}", DATABASE])
    return target


def _physical_backup(sandbox: Sandbox, processes: ProcessGroup, target: Path) -> Path:
    """mariabackup --backup of the whole demo server (unprepared, as a DBA keeps it)."""
    shutil.rmtree(target, ignore_errors=True)
    command = [
        find_tool(("mariabackup", "mariadb-backup")),
        "--no-defaults",
        "--backup",
        "--user=root",
        f"--socket={sandbox.socket_path}",
        f"--datadir={sandbox.datadir}",
        f"--target-dir={target}",
    ]
    process = processes.popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, stderr = process.communicate()
    if process.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise SandboxError(f"mariabackup of the demo server failed: {stderr.decode(errors='replace').strip()[-2000:]}")
    return target


# mydumper 0.10 now and then hangs for good with all its threads asleep: give it a minute, then try again.
MYDUMPER_TIMEOUT_S = 60


def _mydumper_dump(sandbox: Sandbox, processes: ProcessGroup, target: Path) -> Path:
    command = [
        find_tool(("mydumper",)),
        f"--socket={sandbox.socket_path}",
        "--user=root",
        f"--database={DATABASE}",
        f"--outputdir={target}",
        "--rows=1000",  # several chunks per big table, so parallel loaders have something to share
        "--triggers",
        "--events",
        "--routines",
        "--threads=2",
    ]
    for _attempt in range(3):
        shutil.rmtree(target, ignore_errors=True)
        process = processes.popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, stderr = process.communicate(timeout=MYDUMPER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            continue
        if process.returncode != 0:
            raise SandboxError(f"mydumper of the demo database failed: {stderr.decode().strip()}")
        return target
    raise SandboxError(f"mydumper of the demo database hung for {MYDUMPER_TIMEOUT_S} s, three times")


def _gzip_copy(source: Path) -> Path:
    target = source.with_name(source.name + ".gz")
    # Level 6 as the gzip CLI uses; Python's default of 9 takes 2.5x as long for a hardly smaller file.
    with source.open("rb") as plain, gzip.open(target, "wb", compresslevel=6) as compressed:
        shutil.copyfileobj(plain, compressed)
    return target


def _zstd_copy(source: Path) -> Path:
    target = source.with_name(source.name + ".zst")
    with source.open("rb") as plain, target.open("wb") as compressed:
        # write_content_size: the frame header then tells readers the size, like the zstd CLI does.
        zstandard.ZstdCompressor(write_content_size=True).copy_stream(plain, compressed, size=source.stat().st_size)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write demo mysqldump files of a small 'shop' database.")
    parser.add_argument("dest", type=Path, help="directory to write shop.sql, .sql.gz, .sql.zst and -nodb.sql into")
    parser.add_argument("--rows", type=int, default=5000, help="customers and orders to create (default 5000)")
    parser.add_argument("--big", action="store_true", help=f"add a {BIG_TABLE_ROWS}-row sysbench-like table")
    parser.add_argument(
        "--directories", action="store_true", help="also write shop-tab/ (mysqldump --tab) and shop-mydumper/"
    )
    parser.add_argument(
        "--physical", action="store_true", help="also write shop-mariabackup/ (a physical backup of the demo server)"
    )
    parser.add_argument("--work-root", type=Path, help="where the temporary sandbox lives (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.work_root is not None:
        make_demo_dumps(
            args.dest, args.work_root, args.rows, big=args.big, directories=args.directories, physical=args.physical
        )
        return
    with tempfile.TemporaryDirectory(prefix="restorescope-demo-") as work_root:
        make_demo_dumps(
            args.dest, Path(work_root), args.rows, big=args.big, directories=args.directories, physical=args.physical
        )


if __name__ == "__main__":
    main()
