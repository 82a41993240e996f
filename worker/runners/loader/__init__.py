"""restorescope's parallel loader: restores mysqldump files (plain, .gz, .zst), mysqldump --tab directories,
mydumper directories (0.10 and 0.14+/1.x layouts) and MySQL Shell dumps with N connections.

    restore_with_loader(dump, connect, popen, on_progress, on_log, should_stop, database=..., threads=...,
                        chunk_size=...) -> LoaderOutcome

Exceptions (all user-facing: the message says what happened and what to do):

    DumpError (worker.runners.dump_stream)    the dump cannot be read
    ├── LayoutError                            a directory that is not a dump we restore, or damaged metadata
    │   ├── IncompleteDumpError                unfinished dump, missing chunk or file
    │   └── MetadataMismatchError              rows in the files differ from the dump's metadata
    └── DataCutShortError                      a data file ends mid-row or is shorter than its metadata says
    LoaderError                                the load failed
    ├── StatementError                         the server rejected a statement (file and line named)
    └── ServerGoneError                        the connection to the server was lost
    ResumeMismatchError                        the target holds an unfinished load of another dump
    RestoreCancelled (worker.runners.mysql_client)   should_stop() asked to stop; resumable
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymysql

from worker.runners.loader.control import PRIVILEGE_CODES, LoaderError, ServerGoneError, StatementError
from worker.runners.loader.engine import (
    Load,
    LoaderOutcome,
    LoaderProgress,
    LoadOptions,
    MetadataMismatchError,
    dump_identity,
    load_plan,
    load_sql_stream,
)
from worker.runners.loader.layouts import read_layout
from worker.runners.loader.markers import ResumeMismatchError
from worker.runners.loader.plan import IncompleteDumpError, LayoutError
from worker.runners.loader.tasks import DataCutShortError
from worker.runners.mysql_client import RestoreProgress

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_THREADS",
    "PRIVILEGE_CODES",
    "DataCutShortError",
    "IncompleteDumpError",
    "LayoutError",
    "LoaderError",
    "LoaderOutcome",
    "LoaderProgress",
    "MetadataMismatchError",
    "ResumeMismatchError",
    "ServerGoneError",
    "StatementError",
    "restore_with_loader",
]

DEFAULT_THREADS = 2
DEFAULT_CHUNK_SIZE = 64 << 20
MIN_CHUNK_SIZE = 64 << 10


def restore_with_loader(
    dump: Path,
    connect: Callable[[], pymysql.connections.Connection[Any]],
    popen: Callable[..., subprocess.Popen[bytes]] | None,
    on_progress: Callable[[RestoreProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
    *,
    database: str | None = None,
    threads: int = DEFAULT_THREADS,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    defer_indexes: bool = True,
    progress_file: Path | None = None,
) -> LoaderOutcome:
    """Restore `dump` (a file or a dump directory) into the server `connect()` reaches, with `threads`
    loading connections, and return what the dump holds (rows per table) for verification.

    `connect` returns a new connection each call, with autocommit and local_infile on (Sandbox.connect and
    app.targets.connection.connect both do). `popen` is not used: the loader runs in this process's threads
    and decompresses in-process; it is taken so every runner has the same shape. `database`: where a dump
    that does not name its database (a mysqldump .sql without USE, a --tab directory) goes.

    Resume: a load that was cancelled or died leaves the schema `_restorescope` in the target; calling this
    again with the same dump continues it (chunk_size is taken from the first run), loading no row twice.
    `progress_file`, when given, is rewritten (atomically) with the counters every 0.5 s.

    Callbacks run on the calling thread: on_progress every 0.5 s and at each phase, on_log with notes and
    warnings, should_stop every 0.25 s at most.
    """
    plan = read_layout(dump, database) if dump.is_dir() else None  # bad input fails before any connection
    options = LoadOptions(max(threads, 1), max(chunk_size, MIN_CHUNK_SIZE), defer_indexes, progress_file)
    load = Load(connect, options, on_progress, on_log, should_stop)
    try:
        identity, description = dump_identity(dump, f"{database}")
        load.open_markers(identity, description)
        if plan is not None:
            return load_plan(load, plan)
        return load_sql_stream(load, dump, database)
    except BaseException as error:
        load.stop_workers()
        load.fail(error)
        raise
    finally:
        load.close()
