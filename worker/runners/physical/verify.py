"""Check a server started on restored files: every table of the user's schemas passes CHECK TABLE and can be
counted, the counts match what the source had (when known), and the server's error log is free of
corruption messages."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pymysql.connections

from worker.runners.dump_stream import TableKey
from worker.runners.mysql_client import RestoreCancelled

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
_CONNECTION_LOST = frozenset({2006, 2013})
# What InnoDB and Aria write when a restored file is damaged (the server may still start and answer).
_LOG_PROBLEM = re.compile(
    r"\[ERROR\]|corrupt|checksum mismatch|is marked as crashed|log sequence number \d+ is in the future|"
    r"was not found at|Missing FILE_|Plugin 'InnoDB' (init function returned error|registration .* failed)",
    re.IGNORECASE,
)
_LOG_LINES_KEPT = 10
_TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\d|\d{6}) +\d\d:\d\d:\d\d( \d+)? *")


@dataclass
class VerifyProgress:
    tables_done: int
    tables_total: int
    table: TableKey | None  # the table being checked


def verify_server(
    connect: Callable[[], pymysql.connections.Connection[Any]],
    on_progress: Callable[[VerifyProgress], None],
    should_stop: Callable[[], bool],
    *,
    expected_rows: dict[TableKey, int] | None = None,
    check_tables: bool = True,
) -> tuple[dict[TableKey, int], list[str]]:
    """The row count of every table of the user's schemas, and the problems found (empty when all is well).
    `check_tables=False` skips CHECK TABLE (which reads every index) and only counts rows."""
    problems: list[str] = []
    rows: dict[TableKey, int] = {}
    with connect() as connection, connection.cursor() as cursor:
        tables = _user_tables(cursor)
        for done, (key, engine) in enumerate(tables):
            if should_stop():
                raise RestoreCancelled("the restore was cancelled while checking the restored tables")
            on_progress(VerifyProgress(done, len(tables), key))
            try:
                if check_tables:
                    problems += _check_table(cursor, key, engine)
                rows[key] = _count_rows(cursor, key)
            except pymysql.err.MySQLError as error:
                code = error.args[0] if error.args else None
                if code in _CONNECTION_LOST:
                    problems.append(f"the server stopped while reading {_name(key)} ({error}): see its error log")
                    break
                problems.append(f"{_name(key)} ({engine}) cannot be read: {error}")
        on_progress(VerifyProgress(len(rows), len(tables), None))
    problems += _compare_rows(rows, expected_rows or {})
    return rows, problems


def error_log_problems(error_log: Path, offset: int = 0) -> list[str]:
    """Lines of the server's error log (from `offset`) that tell of corruption or a failed engine."""
    try:
        with error_log.open("rb") as log_file:
            log_file.seek(offset)
            text = log_file.read().decode(errors="replace")
    except OSError as error:
        return [f"the server's error log {error_log} cannot be read ({error.strerror})"]
    # Without the timestamps, each message once: a damaged page is reported at every read of it.
    found = list(
        dict.fromkeys(_TIMESTAMP.sub("", line).strip() for line in text.splitlines() if _LOG_PROBLEM.search(line))
    )
    if len(found) > _LOG_LINES_KEPT:
        found = [*found[:_LOG_LINES_KEPT], f"... and {len(found) - _LOG_LINES_KEPT} more such lines in {error_log}"]
    return [f"the server's error log says: {line}" for line in found]


def _user_tables(cursor: Any) -> list[tuple[TableKey, str]]:
    placeholders = ", ".join(["%s"] * len(SYSTEM_SCHEMAS))
    cursor.execute(
        "SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES "
        f"WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ({placeholders}) ORDER BY 1, 2",
        SYSTEM_SCHEMAS,
    )
    return [((str(schema), str(name)), str(engine)) for schema, name, engine in cursor.fetchall()]


def _check_table(cursor: Any, key: TableKey, engine: str) -> list[str]:
    cursor.execute(f"CHECK TABLE {_quoted(key)}")
    results = cursor.fetchall()
    said = [f"{kind}: {text}" for _table, _op, kind, text in results if str(kind).lower() in ("error", "warning")]
    statuses = [str(text) for _table, _op, kind, text in results if str(kind).lower() == "status"]
    if said or statuses != ["OK"]:
        return [f"CHECK TABLE {_name(key)} ({engine}) failed: {'; '.join(said + statuses) or 'no status'}"]
    return []


def _count_rows(cursor: Any, key: TableKey) -> int:
    cursor.execute(f"SELECT COUNT(*) FROM {_quoted(key)}")
    return int(cursor.fetchone()[0])


def _compare_rows(rows: dict[TableKey, int], expected: dict[TableKey, int]) -> list[str]:
    problems = []
    for key, count in sorted(expected.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        if key not in rows:
            problems.append(f"{_name(key)} is missing from the restored server (the source had {count} rows)")
        elif rows[key] != count:
            problems.append(f"{_name(key)} has {rows[key]} rows after the restore, the source had {count}")
    return problems


def _quoted(key: TableKey) -> str:
    schema, name = key
    quoted_name = "`" + name.replace("`", "``") + "`"
    return quoted_name if schema is None else "`" + schema.replace("`", "``") + "`." + quoted_name


def _name(key: TableKey) -> str:
    return _quoted(key)
