"""Other backups of the same data: the same tables in a format or compression that costs less to restore.

A run's tables are the ones its verification counted; a candidate holds the same data when it holds exactly
those tables (a --tab directory names no database: it is restored into the run's one). Which tables a dump
directory holds is read from its file names only (cheap); a single dump file does not list its tables without
reading it through, so it matches by its name (the same stem with another compression) and its databases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote

from app.advisor.evidence import Alternative

_COMPRESSION_SUFFIXES = (".gz", ".zst", ".zstd", ".bz2")
_MYSQLSH_TABLE = re.compile(r"^([^@]+)@([^@]+)\.json$")
_MYDUMPER_SCHEMA = re.compile(r"^(.+?)\.(.+)-schema\.sql$")


def plain_name(name: str) -> str:
    for suffix in _COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def tables_in_names(backup_format: str, names: Iterable[str]) -> set[tuple[str | None, str]] | None:
    """(database, table) of a dump directory from its file names; None when the names cannot tell."""
    plain = [plain_name(name) for name in names]
    if backup_format == "mysqldump-tab":
        return {(None, name[:-4]) for name in plain if name.endswith(".txt")}
    if backup_format == "mysqlsh":
        found = (_MYSQLSH_TABLE.match(name) for name in plain)
        return {(unquote(m.group(1)), unquote(m.group(2))) for m in found if m is not None}
    if backup_format == "mydumper":
        found = (_MYDUMPER_SCHEMA.match(name) for name in plain)
        return {(m.group(1), m.group(2)) for m in found if m is not None}
    return None


def is_delimited(backup_format: str, details: dict[str, object]) -> bool:
    """Rows as delimited text the server reads with LOAD DATA, not SQL statements it parses."""
    if backup_format in ("mysqldump-tab", "mysqlsh"):
        return True
    return backup_format == "mydumper" and bool(details.get("load_data"))


def same_tables(candidate: set[tuple[str | None, str]], run_tables: set[tuple[str, str]]) -> tuple[bool, str | None]:
    """Whether a candidate holds exactly the run's tables, and the database a nameless (--tab) one goes into."""
    if not run_tables:
        return False, None
    databases = {database for database, _ in run_tables}
    if all(database is None for database, _ in candidate):
        if len(databases) != 1:
            return False, None
        database = next(iter(databases))
        return {(database, table) for _, table in candidate} == run_tables, database
    return candidate == run_tables, None


def same_dump_file(candidate: str, run_path: str) -> bool:
    """Another compression of the same mysqldump file: shop.sql.gz next to shop.sql.zst or shop.sql."""
    return plain_name(Path(candidate).name) == plain_name(Path(run_path).name) and candidate != run_path


def find_alternatives(
    run_path: str,
    run_format: str,
    run_databases: list[str],
    run_tables: set[tuple[str, str]],
    candidates: Iterable[tuple[str, str, str | None, int, dict[str, object]]],
    list_names: Callable[[str], list[str] | None],
) -> list[Alternative]:
    """Candidates are (path, format, compression, size, details) of the backups under the roots."""
    found: list[Alternative] = []
    for path, backup_format, compression, size, details in candidates:
        if path == run_path:
            continue
        if backup_format == "mysqldump":
            databases = details.get("databases")
            named = [str(d) for d in databases] if isinstance(databases, list) else []
            if same_dump_file(path, run_path) and run_format == "mysqldump" and named == run_databases:
                found.append(Alternative(path, backup_format, compression, size, delimited=False))
            continue
        names = list_names(path)
        tables = tables_in_names(backup_format, names) if names is not None else None
        if not tables:
            continue
        matches, database = same_tables(tables, run_tables)
        if matches:
            delimited = is_delimited(backup_format, details)
            found.append(Alternative(path, backup_format, compression, size, delimited, database))
    return found


def list_directory(path: str) -> list[str] | None:
    """The file names inside a backup directory; None when it cannot be read."""
    try:
        return [child.name for child in Path(path).iterdir()]
    except OSError:
        return None
