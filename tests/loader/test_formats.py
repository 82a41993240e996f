"""Every dump format, made by the real tools (mysqldump, mysqldump --tab, mydumper 0.10) or by the layout
helpers (mydumper 1.x, MySQL Shell), restored by the parallel loader into a sandbox and compared with the
source: same objects, same rows, triggers created after the data (an insert trigger adds 1000 to every
amount, so a trigger that fired on restored rows shows in the checksum)."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from tests.loader.conftest import EVENTS_LOG_ROWS, SCHEMA, Dumps, Recorder, Server, copy_dump, restore
from worker.runners.loader import MIN_CHUNK_SIZE, LoaderProgress

pytestmark = pytest.mark.integration

EXPECTED_ROWS = {
    "customers": 1000,
    "orders": 5000,
    "events_log": EVENTS_LOG_ROWS,
    "nopk": 500,
    "empty_table": 0,
    "we@ird name": 2,
    "counters": 300,
}


@pytest.mark.parametrize(
    ("dump", "format_name"),
    [
        ("sql", "mysqldump"),
        ("sql_zst", "mysqldump"),
        ("tab", "mysqldump-tab"),
        ("mydumper_010", "mydumper"),
        ("mydumper_1x", "mydumper"),
        ("mydumper_1x_load_data", "mydumper"),
        ("mydumper_1x_gzip", "mydumper"),
        ("mysqlsh", "mysqlsh"),
    ],
)
def test_restore_matches_the_source(dump: str, format_name: str, dumps: Dumps, source: Server, target: Server) -> None:
    recorder = Recorder()
    database = SCHEMA if dump == "tab" else None

    outcome = restore(target, getattr(dumps, dump), database=database, recorder=recorder)

    assert outcome.format == format_name
    assert outcome.expected_rows == {(SCHEMA, table): rows for table, rows in EXPECTED_ROWS.items()}
    assert target.fingerprint(SCHEMA) == source.fingerprint(SCHEMA)
    assert target.query("SHOW DATABASES LIKE '\\_restorescope'") == []  # finished: no resume markers left
    last = recorder.progress[-1]
    assert isinstance(last, LoaderProgress)
    assert (last.phase, last.bytes_done, last.rows_done) == ("done", last.bytes_total, sum(EXPECTED_ROWS.values()))
    assert outcome.chunks_loaded > len(EXPECTED_ROWS)  # events_log came in several chunks
    # Every format, a compressed .sql too: secondary indexes are built after the rows.
    assert "`shop`.`customers`: secondary indexes `name_idx` are built after the rows" in recorder.log


def test_dump_without_database_goes_where_asked(dumps: Dumps, source: Server, target: Server) -> None:
    outcome = restore(target, dumps.sql_no_database, database="restored")

    assert outcome.expected_rows == {("restored", table): rows for table, rows in EXPECTED_ROWS.items()}
    for table in EXPECTED_ROWS:
        assert (
            target.query(f"CHECKSUM TABLE `restored`.`{table}` EXTENDED")[0][1]
            == (source.query(f"CHECKSUM TABLE `shop`.`{table}` EXTENDED")[0][1])
        )


def test_secondary_indexes_are_built_after_the_rows(dumps: Dumps, target: Server) -> None:
    restore(target, dumps.mysqlsh)

    # Same indexes as the source (compared above); here: they exist and are usable.
    assert target.query("SELECT COUNT(*) FROM shop.events_log FORCE INDEX (k) WHERE k = 5") == [
        (EVENTS_LOG_ROWS // 97 + (1 if EVENTS_LOG_ROWS % 97 >= 5 else 0),)
    ]
    assert target.query("SELECT COUNT(*) FROM shop.events_log WHERE MATCH(payload) AGAINST ('event')")[0][0] > 0


@pytest.mark.parametrize("dump", ["tab", "mysqlsh"])
def test_a_big_auto_increment_table_is_loaded_by_one_connection_with_its_indexes_after(
    dump: str, dumps: Dumps, source: Server, target: Server
) -> None:
    """events_log is most of the dump and has an AUTO_INCREMENT column: a LOAD DATA into it holds its AUTO-INC
    lock to the end, so a second connection would only wait; one connection at a time loads it, and its
    secondary indexes (a B-tree and a FULLTEXT one) are built once its rows are in."""
    recorder = Recorder()

    restore(target, getattr(dumps, dump), database=SCHEMA if dump == "tab" else None, recorder=recorder)

    assert (
        "`shop`.`events_log`: loaded by one connection at a time, with LOAD DATA (it has an AUTO_INCREMENT "
        "column, whose lock a LOAD DATA holds until it ends)"
    ) in recorder.log
    assert any(line.startswith("`shop`.`events_log`: secondary indexes `k`") for line in recorder.log)
    assert target.fingerprint(SCHEMA) == source.fingerprint(SCHEMA)


def test_mysql_shell_dump_written_without_compression(
    dumps: Dumps, source: Server, target: Server, tmp_path: Path
) -> None:
    """util.dumpSchemas(..., {compression: "none"}) writes plain .tsv chunks, each with its size in @.done.json:
    a chunk of such a file (cut before loading) is checked against nothing but the whole file's size."""
    dump = copy_dump(dumps.mysqlsh, tmp_path)
    for chunk in dump.glob("*.tsv.zst"):
        chunk.with_suffix("").write_bytes(zstandard.ZstdDecompressor().decompressobj().decompress(chunk.read_bytes()))
        chunk.unlink()
    for meta in dump.glob("*.json"):
        text = meta.read_text().replace(".tsv.zst", ".tsv").replace('"tsv.zst"', '"tsv"')
        meta.write_text(text.replace('"compression": "zstd"', '"compression": "none"'))

    restore(target, dump, chunk_size=MIN_CHUNK_SIZE)

    assert target.fingerprint(SCHEMA) == source.fingerprint(SCHEMA)
