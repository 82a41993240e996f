"""Damaged and unfinished dumps: the user gets a message naming the problem and what to do; a dump known to be
incomplete is refused before anything is written, and a load that fails midway leaves the target marked
unfinished (schema `_restorescope`, state 'failed' with the reason) instead of looking restored."""

from __future__ import annotations

import bz2
import gzip
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.loader.conftest import Dumps, Server, copy_dump, restore
from worker.runners.dump_stream import TruncatedDumpError
from worker.runners.loader import (
    DataCutShortError,
    IncompleteDumpError,
    LayoutError,
    LoaderError,
    MetadataMismatchError,
    StatementError,
    restore_with_loader,
)

pytestmark = pytest.mark.integration


def user_databases(target: Server) -> list[str]:
    return [
        name
        for (name,) in target.query("SHOW DATABASES")
        if name not in ("mysql", "information_schema", "performance_schema", "sys")
    ]


def failed_state(target: Server) -> str:
    ((status, message),) = target.query("SELECT status, message FROM _restorescope.state")
    assert status == "failed"
    return str(message)


def test_missing_mydumper_chunk_is_refused_before_loading(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    dump = copy_dump(dumps.mydumper_010, tmp_path)
    (dump / "shop.events_log.00003.sql").unlink()

    with pytest.raises(IncompleteDumpError) as caught:
        restore(target, dump)

    assert str(caught.value) == (
        "chunk 00003 of `shop`.`events_log` is missing (shop.events_log.00003.sql): the dump is incomplete; "
        "copy the whole dump directory again"
    )
    assert user_databases(target) == []


def test_unfinished_mydumper_dump_is_refused(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    dump = copy_dump(dumps.mydumper_010, tmp_path)
    (dump / "metadata").rename(dump / "metadata.partial")

    with pytest.raises(IncompleteDumpError, match=r"unfinished mydumper dump \(metadata.partial, no metadata\)"):
        restore(target, dump)
    assert user_databases(target) == []


def test_mysql_shell_dump_without_done_json_is_refused(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    dump = copy_dump(dumps.mysqlsh, tmp_path)
    (dump / "@.done.json").unlink()

    with pytest.raises(IncompleteDumpError) as caught:
        restore(target, dump)

    assert str(caught.value) == (
        "shop-mysqlsh is an unfinished MySQL Shell dump: @.done.json is missing (the Shell writes it last), so the "
        "dump was interrupted or is still running; wait for it to finish or dump again"
    )
    assert user_databases(target) == []


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        (
            "shop@events_log@2.tsv.zst",
            "data chunk shop@events_log@2.tsv.zst is missing (the chunks go up to shop@events_log@@",
        ),
        ("last", "the last data chunk of shop@events_log (named shop@events_log@@N.tsv.zst) is missing"),
    ],
)
def test_missing_mysql_shell_chunk_is_refused(
    remove: str, message: str, dumps: Dumps, target: Server, tmp_path: Path
) -> None:
    dump = copy_dump(dumps.mysqlsh, tmp_path)
    if remove == "last":
        (last,) = dump.glob("shop@events_log@@*.tsv.zst")
        last.unlink()
    else:
        (dump / remove).unlink()

    with pytest.raises(IncompleteDumpError) as caught:
        restore(target, dump)

    assert str(caught.value).startswith(message)
    assert user_databases(target) == []


def test_truncated_compressed_chunk_fails_and_leaves_the_target_marked(
    dumps: Dumps, target: Server, tmp_path: Path
) -> None:
    dump = copy_dump(dumps.mysqlsh, tmp_path)
    chunk = dump / "shop@events_log@2.tsv.zst"
    chunk.write_bytes(chunk.read_bytes()[: chunk.stat().st_size // 2])

    with pytest.raises(TruncatedDumpError) as caught:
        restore(target, dump)

    assert re.fullmatch(
        r".*/shop@events_log@2\.tsv\.zst ends before the end of its zstd stream after \d+ bytes: the file is "
        r"truncated or still being copied; copy the backup again",
        str(caught.value),
    )
    assert failed_state(target) == str(caught.value)
    # The rows sent before the cut were rolled back with their chunk: only finished chunks are in.
    ((loaded,),) = target.query("SELECT COUNT(*) FROM shop.events_log")
    ((marked,),) = target.query(
        "SELECT COALESCE(SUM(rows_loaded), 0) FROM _restorescope.chunks_done WHERE chunk LIKE 'shop.events\\_log#%'"
    )
    assert loaded == marked < 20_000


def test_metadata_that_disagrees_with_the_files_fails(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    dump = copy_dump(dumps.mydumper_1x, tmp_path)
    metadata = dump / "metadata"
    metadata.write_text(
        metadata.read_text().replace(
            "real_table_name=events_log\nrows = 20000", "real_table_name=events_log\nrows = 20500"
        )
    )

    with pytest.raises(MetadataMismatchError) as caught:
        restore(target, dump)

    assert str(caught.value) == (
        "the dump's metadata disagrees with its data files (`shop`.`events_log`: metadata 20500, files 20000): a "
        "chunk file is missing or was changed after the dump; the restore is incomplete (the target keeps the "
        "schema `_restorescope` to show it); dump again or copy the missing files"
    )
    assert failed_state(target).startswith("the dump's metadata disagrees")


def test_mysql_shell_chunk_shorter_than_its_metadata_fails(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    dump = copy_dump(dumps.mysqlsh, tmp_path)
    done = dump / "@.done.json"
    text = done.read_text()
    size = int(re.search(r'"shop@nopk@@0\.tsv\.zst": (\d+)', text)[1])  # type: ignore[index]
    done.write_text(text.replace(f'"shop@nopk@@0.tsv.zst": {size}', f'"shop@nopk@@0.tsv.zst": {size + 10}'))

    with pytest.raises(DataCutShortError) as caught:
        restore(target, dump)

    assert str(caught.value) == (
        f"shop@nopk@@0.tsv.zst holds {size} bytes of rows but the dump's metadata says {size + 10}: the file was "
        "changed or cut after the dump; copy the dump again"
    )


def test_tab_file_cut_mid_row_fails(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    dump = copy_dump(dumps.tab, tmp_path)
    rows = dump / "nopk.txt"
    rows.write_bytes(rows.read_bytes()[:-3])

    with pytest.raises(DataCutShortError, match=r"^nopk.txt ends in the middle of a row: the file is cut short"):
        restore(target, dump, database="shop")
    assert target.query("SELECT COUNT(*) FROM shop.nopk") == [(0,)]  # its chunk rolled back
    assert failed_state(target).startswith("nopk.txt ends in the middle of a row")


def test_sql_dump_cut_inside_a_string_fails(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    text = dumps.sql.read_bytes()
    cut = text.index(b"'line\\nbreak;'") + 6
    dump = tmp_path / "cut.sql"
    dump.write_bytes(text[:cut])

    with pytest.raises(LoaderError, match=r"^cut.sql: the SQL ends inside a '\.\.\.' string in the statement at line"):
        restore(target, dump)
    assert failed_state(target).startswith("cut.sql: the SQL ends inside")


@pytest.mark.parametrize(
    ("compress", "suffix", "kind"), [(gzip.compress, "gz", "gzip"), (bz2.compress, "bz2", "bzip2")]
)
def test_truncated_compressed_dump_fails(
    dumps: Dumps, target: Server, tmp_path: Path, compress: Callable[[bytes], bytes], suffix: str, kind: str
) -> None:
    compressed = compress(dumps.sql.read_bytes())
    dump = tmp_path / f"shop.sql.{suffix}"
    dump.write_bytes(compressed[: len(compressed) // 2])

    with pytest.raises(TruncatedDumpError, match=f"ends before the end of its {kind} stream"):
        restore(target, dump)


def test_sql_statement_the_server_rejects_names_the_line(target: Server, tmp_path: Path) -> None:
    dump = tmp_path / "bad.sql"
    dump.write_text(
        "CREATE DATABASE d;\nUSE d;\nCREATE TABLE t (a INT);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2,;\n"
    )

    with pytest.raises(StatementError) as caught:
        restore(target, dump)

    assert str(caught.value).startswith("the server rejected the statement at line 5 of the dump: ERROR 1064:")


def test_directory_that_is_no_dump(target: Server, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LayoutError, match="holds no dump restorescope knows"):
        restore(target, tmp_path)


def test_a_user_without_privileges_is_told_so(dumps: Dumps, target: Server) -> None:
    target.run_all(
        [
            "CREATE USER IF NOT EXISTS 'reader'@'localhost' IDENTIFIED BY 'pw'",
            "GRANT SELECT ON *.* TO 'reader'@'localhost'",
        ]
    )

    def connect() -> Any:
        return pymysql.connect(
            unix_socket=str(target.sandbox.socket_path),
            user="reader",
            password="pw",
            autocommit=True,
            local_infile=True,
        )

    log: list[str] = []
    with pytest.raises(StatementError) as caught:
        restore_with_loader(dumps.mysqlsh, connect, None, lambda _p: None, log.append, lambda: False)

    assert str(caught.value) == (
        "the server refused the schema `_restorescope` where the restore records what it has loaded: ERROR 1044: "
        "Access denied for user 'reader'@'localhost' to database '_restorescope'; the target's user lacks a "
        "privilege the restore needs (it creates databases, tables, views, routines, triggers and events)"
    )
    assert log[0].startswith("note: could not turn off binary logging for the restore (Access denied")
