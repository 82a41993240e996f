"""Print how fast RowCounter and DumpReader go on mysqldump-like INSERT data (MB/s); not a test.

Usage: PYTHONPATH=. .venv/bin/python bench/dump_stream_speed.py [megabytes]
"""

from __future__ import annotations

import functools
import gzip
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import zstandard

from worker.runners.dump_stream import RowCounter, open_dump

CHUNK = 1 << 20


def sysbench_like_rows(count: int, rows_per_statement: int, one_row_per_line: bool) -> bytes:
    """Rows shaped like sysbench's sbtest tables, as MariaDB 10.11's mysqldump writes them."""
    rng = random.Random(7)
    separator = ",\n" if one_row_per_line else ","
    opener = "INSERT INTO `sbtest1` VALUES\n" if one_row_per_line else "INSERT INTO `sbtest1` VALUES "
    statements = []
    for first in range(0, count, rows_per_statement):
        rows = []
        for row_id in range(first, min(first + rows_per_statement, count)):
            c = "-".join(str(rng.randrange(10**10, 10**11)) for _ in range(10))
            pad = "-".join(str(rng.randrange(10**10, 10**11)) for _ in range(5))
            rows.append(f"({row_id},{rng.randrange(10**6)},'{c}','{pad}')")
        statements.append(opener + separator.join(rows) + ";\n")
    return "".join(statements).encode()


def strings_with_escapes(count: int) -> bytes:
    rows = ",".join(f"({i},'it\\'s a ),( test\\\\','x''y',NULL)" for i in range(count))
    return f"INSERT INTO `t` VALUES {rows};\n".encode() * 4


def measure(label: str, data: bytes, run: Callable[[], None]) -> None:
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    print(f"{label:<44} {len(data) / seconds / 1e6:8.0f} MB/s")


def count_all(data: bytes) -> None:
    counter = RowCounter()
    view = memoryview(data)
    for offset in range(0, len(data), CHUNK):
        counter.feed(bytes(view[offset : offset + CHUNK]))
    counter.finish()


def read_all(path: Path) -> None:
    with open_dump(path) as reader:
        for _ in reader.chunks():
            pass


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rows = megabytes * 1_000_000 // 190
    row_per_line = sysbench_like_rows(rows, 5000, one_row_per_line=True)
    one_line = sysbench_like_rows(rows, 5000, one_row_per_line=False)
    single_row = sysbench_like_rows(rows // 4, 1, one_row_per_line=False)
    escapes = strings_with_escapes(rows // 2)
    measure("RowCounter, extended INSERT, row per line", row_per_line, lambda: count_all(row_per_line))
    measure("RowCounter, extended INSERT, one line", one_line, lambda: count_all(one_line))
    measure("RowCounter, --skip-extended-insert", single_row, lambda: count_all(single_row))
    measure("RowCounter, strings with escapes", escapes, lambda: count_all(escapes))
    with tempfile.TemporaryDirectory() as directory:
        plain = Path(directory, "dump.sql")
        plain.write_bytes(row_per_line)
        zst = Path(directory, "dump.sql.zst")
        zst.write_bytes(zstandard.ZstdCompressor(level=3).compress(row_per_line))
        gz = Path(directory, "dump.sql.gz")
        gz.write_bytes(gzip.compress(row_per_line, compresslevel=1))
        for path in (plain, zst, gz):
            measure(f"DumpReader {path.name} (decompressed MB/s)", row_per_line, functools.partial(read_all, path))


if __name__ == "__main__":
    main()
