"""Rows a dump's data files hold, counted without a server: the verification oracle for runners that hand
the files to another tool (myloader, mysqlimport)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from worker.runners.loader import delimited
from worker.runners.loader.plan import DataFile, DataKind, DumpPlan
from worker.runners.loader.sql_script import Kind, ScriptSplitter, TableKey
from worker.runners.loader.tasks import read_file


def rows_in_plan(plan: DumpPlan, should_stop: Callable[[], bool] = lambda: False) -> dict[TableKey, int]:
    """Rows per table: the metadata's count when the dump has one (mydumper 1.x), else counted from the files."""
    rows: dict[TableKey, int] = {}
    for table in plan.tables:
        if table.expected_rows is not None:
            rows[table.key] = table.expected_rows
            continue
        rows[table.key] = sum(rows_in_file(file, should_stop) for file in table.data)
    return rows


def rows_in_file(file: DataFile, should_stop: Callable[[], bool] = lambda: False) -> int:
    if file.kind is DataKind.DELIMITED:
        return _delimited_rows(file.path, should_stop)
    if file.kind is DataKind.SQL_WITH_LOAD and file.rows_file is not None:
        return _delimited_rows(file.rows_file, should_stop)
    splitter = ScriptSplitter()
    count = 0
    for block in read_file(file.path):
        if should_stop():
            break
        count += sum(s.rows for s in splitter.feed(block) if s.kind is Kind.INSERT)
    return count + sum(s.rows for s in splitter.finish() if s.kind is Kind.INSERT)


def _delimited_rows(path: Path, should_stop: Callable[[], bool]) -> int:
    rows, tail = 0, b""
    for block in read_file(path):
        if should_stop():
            break
        data = tail + block
        cut = data.rfind(b"\n") + 1
        rows += delimited.count_rows(data[:cut])
        tail = data[cut:]
    return rows + (1 if tail else 0)
