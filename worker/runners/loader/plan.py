"""What a dump directory holds, read into one shape the loader runs: scripts by phase and data files by table.

Layout readers (layouts/*.py) build a `DumpPlan` without touching a server and refuse a dump that cannot be
restored whole (a missing chunk, an unfinished dump, metadata that disagrees with the files) before
anything is loaded.

Exceptions:

    LayoutError            the directory is not a dump we can restore; the message says why and what to do
    └── IncompleteDumpError   the dump tool did not finish (or is still running), or files are missing
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from worker.runners.dump_stream import DumpError
from worker.runners.loader.delimited import Dialect


class LayoutError(DumpError):
    """The directory is not a dump the loader can restore."""


class IncompleteDumpError(LayoutError):
    """The dump is unfinished or has files missing: restoring it would leave tables half-filled."""


class DataKind(Enum):
    SQL = "sql"  # INSERT statements (mydumper .sql chunks)
    DELIMITED = "delimited"  # rows for LOAD DATA (mysqldump --tab .txt, MySQL Shell .tsv, mydumper .dat)
    SQL_WITH_LOAD = "sql_with_load"  # a .sql holding LOAD DATA LOCAL INFILE of a .dat next to it (mydumper 1.x)


@dataclass(frozen=True)
class DataFile:
    path: Path
    kind: DataKind
    size: int  # bytes on disk
    dialect: Dialect | None = None  # DELIMITED: how the rows are written
    character_set: str = "utf8mb4"  # DELIMITED: the character set the rows are written in
    columns: tuple[str, ...] | None = None  # DELIMITED: the columns in file order, when the dump says
    # DELIMITED: columns written encoded (MySQL Shell: UNHEX or FROM_BASE64 of binary columns)
    decode_columns: tuple[tuple[str, str], ...] = ()
    rows_file: Path | None = None  # SQL_WITH_LOAD: the .dat the LOAD DATA reads
    expected_bytes: int | None = None  # uncompressed size the dump's metadata promises (MySQL Shell)
    # The file may be cut into chunk_size pieces while it is read: rows end at newlines (default dialect).
    splittable: bool = False

    @property
    def total_size(self) -> int:
        return self.size + (self.rows_file.stat().st_size if self.rows_file is not None else 0)


@dataclass(frozen=True)
class Script:
    """SQL from one file of the dump, run statement by statement on one connection in `database`."""

    name: str  # the file's name, for messages
    text: bytes
    database: str | None = None


@dataclass
class TablePlan:
    database: str
    name: str
    ddl: list[Script]
    data: list[DataFile] = field(default_factory=list)
    expected_rows: int | None = None  # what the dump's metadata says, checked against the rows loaded

    @property
    def key(self) -> tuple[str, str]:
        return self.database, self.name

    @property
    def data_bytes(self) -> int:
        return sum(f.total_size for f in self.data)


@dataclass
class DumpPlan:
    format: str  # "mysqldump-tab", "mydumper", "mysqlsh"
    root: Path
    # Phase 1: run in order before any data (CREATE DATABASE, session set-up, view placeholders).
    before: list[Script] = field(default_factory=list)
    tables: list[TablePlan] = field(default_factory=list)
    # Phase 3, in this order once every row is in: routines and events, views, triggers, closing scripts.
    routines: list[Script] = field(default_factory=list)
    views: list[Script] = field(default_factory=list)
    triggers: list[Script] = field(default_factory=list)
    after: list[Script] = field(default_factory=list)
    # Session settings the data was written for (time_zone, sql_mode, ...), applied to every connection.
    session: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def databases(self) -> list[str]:
        seen: list[str] = []
        for table in self.tables:
            if table.database not in seen:
                seen.append(table.database)
        return seen

    @property
    def data_bytes(self) -> int:
        return sum(t.data_bytes for t in self.tables)
