"""Run a load: the control connection for DDL, N loading connections for the rows, the steps after the data,
progress, cancel and resume. Two drivers share it: a dump directory read into a plan up front, and a
mysqldump .sql split while it streams."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql

from worker.runners.dump_stream import DumpError, open_dump
from worker.runners.loader import session as sessions
from worker.runners.loader.control import (
    DEFER_ALL,
    DEFER_ALL_BUT_VIEWS,
    DEFER_NOTHING,
    Control,
    Deferred,
    LoaderError,
    explain,
)
from worker.runners.loader.markers import SCHEMA, Markers, ResumeState
from worker.runners.loader.plan import DataFile, DataKind, DumpPlan, LayoutError, Script
from worker.runners.loader.scheduler import Claim, Scheduler, Source, Task
from worker.runners.loader.session import SessionState
from worker.runners.loader.sql_script import Kind, ScriptError, ScriptSplitter, Statement, TableKey
from worker.runners.loader.statements import (
    Action,
    classify,
    has_auto_increment,
    qualified,
)
from worker.runners.loader.tasks import (
    ChunkError,
    Counters,
    DelimitedSource,
    DelimitedTask,
    SqlSource,
    SqlTask,
    StepTask,
    Worker,
    base_session_statements,
    plain_file_chunks,
)
from worker.runners.mysql_client import RestoreCancelled, RestoreOutcome, RestoreProgress

if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[Any]
PROGRESS_INTERVAL_SECONDS = 0.5
STOP_CHECK_SECONDS = 0.25
# Codes of a CREATE VIEW whose tables, views or functions do not exist yet: tried again after the others.
_VIEW_DEPENDENCY_CODES = frozenset({1146, 1356, 1305, 1449})
_TRANSACTIONAL_ENGINES = frozenset({"InnoDB"})


class MetadataMismatchError(LayoutError):
    """The rows in the files differ from what the dump's metadata says."""


@dataclass
class LoaderProgress(RestoreProgress):
    chunks_done: int = 0
    phase: str = "schema"  # schema, data, after-data, done
    tables_total: int = 0


@dataclass
class LoaderOutcome(RestoreOutcome):
    format: str = "mysqldump"
    resumed: bool = False
    chunks_loaded: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds_by_phase: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadOptions:
    threads: int = 2
    chunk_size: int = 64 << 20
    # Secondary indexes built after each table's rows: from sorted rows InnoDB spends 1.1 s of CPU per million
    # sysbench rows, row by row 2.9 s. That holds for a table most of the dump is too, now that its
    # connections load contiguous runs (skewed set, fast-restore: 29.6-30.2 s against 31.8-33.9 s with the
    # index kept), though its build comes last, on one core.
    defer_indexes: bool = True
    progress_file: Path | None = None


class Load:
    """State shared by the drivers: connections, scheduler, markers, counters, callbacks."""

    def __init__(
        self,
        connect: Callable[[], Connection],
        options: LoadOptions,
        on_progress: Callable[[RestoreProgress], None],
        on_log: Callable[[str], None],
        should_stop: Callable[[], bool],
    ) -> None:
        self.connect = connect
        self.options = options
        self.on_progress = on_progress
        self.on_log = on_log
        self.should_stop = should_stop
        self.counters = Counters()
        self.scheduler = Scheduler()
        self.bytes_total = 0
        self.phase = "schema"
        self.tables_total = 0
        self._next_progress = 0.0
        self._threads: list[threading.Thread] = []
        self._workers: list[Worker] = []
        self._workers_lock = threading.Lock()
        self._phase_started = time.monotonic()
        self.seconds_by_phase: dict[str, float] = {}
        self.inserts_noted: set[TableKey] = set()
        self.connection = connect()
        self.base = base_session_statements(self.connection, on_log)
        self.control = Control(self.connection, self.base, on_log)
        self.markers = Markers(self.connection)
        self.resume = ResumeState(False, options.chunk_size)
        self.autoinc_lock_mode = autoinc_lock_mode(self.connection)

    # --- lifecycle ----------------------------------------------------------------------------------

    def open_markers(self, identity: str, description: str) -> None:
        try:
            self.resume = self.markers.open(identity, description, self.options.chunk_size)
        except pymysql.err.MySQLError as error:
            raise explain(error, f"the schema `{SCHEMA}` where the restore records what it has loaded") from error
        if self.resume.resumed:
            self.on_log(
                f"resuming an unfinished restore of this dump: {len(self.resume.chunks)} chunks are already in "
                "and are not loaded again"
            )

    def enter(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds_by_phase[self.phase] = self.seconds_by_phase.get(self.phase, 0.0) + now - self._phase_started
        self.phase, self._phase_started = phase, now
        self.pump(force=True)

    def start_workers(self) -> None:
        for index in range(self.options.threads):
            thread = threading.Thread(target=self._work, name=f"loader-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        try:
            worker = Worker(self.connect(), self.counters, self.base)
        except pymysql.err.MySQLError as error:
            self.scheduler.stop(explain(error, "the set-up of a loading connection"))
            return
        except BaseException as error:  # TargetUnreachable and friends: their message is for the user already
            self.scheduler.stop(error)
            return
        with self._workers_lock:
            self._workers.append(worker)
        try:
            claim: Claim | None = None
            while (claim := self.scheduler.claim(after=claim)) is not None:
                task = claim.task
                try:
                    if claim.source is not None:
                        task = claim.source.cut()
                        if task is None:
                            self.scheduler.exhausted(claim)
                            continue
                    assert task is not None
                    task.run(worker)
                except BaseException as error:
                    self.scheduler.stop(_explain_task_error(error, getattr(task, "chunk", None) or claim.table))
                    return
                finally:
                    self.scheduler.release(claim)
        finally:
            worker.close()

    def stop_workers(self) -> None:
        """Stop the loading connections now: queries in flight are killed, their chunks roll back."""
        self.scheduler.stop()
        with self._workers_lock:
            busy = [w.thread_id for w in self._workers if w.busy]
        for thread_id in busy:
            with contextlib.suppress(pymysql.err.MySQLError):
                self.connection.query(f"KILL QUERY {int(thread_id)}".encode())
        for thread in self._threads:
            thread.join()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()

    # --- the driver's loop ------------------------------------------------------------------------------

    def pump(self, force: bool = False) -> None:
        """Pass log lines and progress to the callbacks, stop on cancel or on a connection's error."""
        while True:
            try:
                line = self.counters.log_lines.get_nowait()
            except queue.Empty:
                break
            self.on_log(line)
        if self.should_stop():
            raise RestoreCancelled("the restore was cancelled; chunks in flight were rolled back")
        if self.scheduler.error is not None:
            raise self.scheduler.error
        now = time.monotonic()
        if force or now >= self._next_progress:
            self._next_progress = now + PROGRESS_INTERVAL_SECONDS
            with self.counters.lock:
                progress = LoaderProgress(
                    self.counters.bytes_done,
                    self.bytes_total,
                    self.counters.rows_done,
                    self.counters.chunks_done,
                    self.phase,
                    self.tables_total,
                )
            self.on_progress(progress)
            self._write_progress_file(progress)

    def wait_until(self, done: Callable[[], bool]) -> None:
        while not done():
            self.pump()
            self.scheduler.wait(STOP_CHECK_SECONDS)
        self.pump()

    def _write_progress_file(self, progress: LoaderProgress) -> None:
        path = self.options.progress_file
        if path is None:
            return
        record = {
            "phase": progress.phase,
            "bytes_done": progress.bytes_done,
            "bytes_total": progress.bytes_total,
            "rows_done": progress.rows_done,
            "chunks_done": progress.chunks_done,
            "resumed": self.resume.resumed,
            "markers_schema": SCHEMA,
            "updated_us": time.time_ns() // 1000,
        }
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(record))
        temporary.replace(path)

    # --- resume of non-transactional tables ------------------------------------------------------------

    def prepare_table(self, key: TableKey) -> None:
        """On resume, a MyISAM/Aria table not finished is emptied: its rows committed without markers."""
        if not self.resume.resumed or f"table:{_name(key)}" in self.resume.steps:
            return
        database, name = key
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (database, name),
            )
            row = cursor.fetchone()
            if row is None or row[0] in _TRANSACTIONAL_ENGINES or row[0] is None:
                return
            self.on_log(f"{_name(key)} is {row[0]} (not transactional): loading it again from its first row")
            cursor.execute(f"TRUNCATE TABLE {qualified(str(database), name).decode()}")
            prefix = f"{_name(key)}#"
            cursor.execute(
                f"DELETE FROM `{SCHEMA}`.chunks_done WHERE LEFT(chunk, CHAR_LENGTH(%s)) = %s", (prefix, prefix)
            )
        prefix = f"{_name(key)}#"
        for chunk in [c for c in self.resume.chunks if c.startswith(prefix)]:
            del self.resume.chunks[chunk]

    def table_done_task(self, key: TableKey) -> StepTask:
        statements = self.control.index_builds.get(key, [])
        return StepTask(key, f"table:{_name(key)}", statements, done=self.markers_step_done)

    def markers_step_done(self, step: str) -> None:
        # Called from a loading connection's thread: record through that thread's own connection.
        connection = self.connect()
        try:
            Markers(connection).step_done(step)
        finally:
            connection.close()

    # --- the steps after the data --------------------------------------------------------------------------

    def run_post_steps(self, steps: list[tuple[str, Callable[[], None]]]) -> None:
        for step, run in steps:
            self.pump()
            if step in self.resume.steps:
                continue
            run()
            self.markers.step_done(step)

    def finish(self, format_name: str, databases: list[str], warnings: list[str]) -> LoaderOutcome:
        self.markers.finish()
        self.enter("done")
        with self.counters.lock:
            expected = dict(self.counters.rows_by_table)
            chunks = self.counters.chunks_done
        return LoaderOutcome(
            expected_rows=expected,
            databases=databases,
            has_use_statements=True,
            format=format_name,
            resumed=self.resume.resumed,
            chunks_loaded=chunks,
            warnings=warnings,
            seconds_by_phase=dict(self.seconds_by_phase),
        )

    def fail(self, error: BaseException) -> None:
        """Leave the reason in the markers' state row, so the target says it holds an unfinished load."""
        message = "cancelled" if isinstance(error, RestoreCancelled) else str(error)
        with contextlib.suppress(Exception):
            self.markers.failed(message)


def loads_alone(create_table: bytes, files: list[DataFile], autoinc_lock_mode: int | None) -> bool:
    """Whether a table's rows go in through one connection at a time.

    LOAD DATA into a table with an AUTO_INCREMENT column holds InnoDB's table-level AUTO-INC lock until the
    statement ends, even when every row gives its id (innodb_autoinc_lock_mode 0 or 1, the default; 2 needs
    a restart), so a second connection's LOAD DATA into it only waits. Sending its rows as multi-row INSERTs
    instead (which take the lock only for an instant) was measured and lost: 7.5 s of server CPU per million
    sysbench rows against 3.9 s for LOAD DATA, so two INSERT streams went no faster than one LOAD DATA
    stream and took twice the CPU (skewed set, 4M rows in one table: 41 s of server CPU against 23 s)."""
    return (
        autoinc_lock_mode != 2
        and bool(files)
        and all(file.kind is not DataKind.SQL for file in files)
        and has_auto_increment(create_table)
    )


def autoinc_lock_mode(connection: Connection) -> int | None:
    """The server's innodb_autoinc_lock_mode, None where it has none (not InnoDB, or hidden from the user)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@GLOBAL.innodb_autoinc_lock_mode")
            row = cursor.fetchone()
    except pymysql.err.MySQLError:
        return None
    return int(row[0]) if row is not None and row[0] is not None else None


def _name(key: TableKey) -> str:
    return f"{key[0]}.{key[1]}"


def _explain_task_error(error: BaseException, where: object) -> BaseException:
    if isinstance(error, pymysql.err.MySQLError):
        return explain(error, f"chunk {where}")
    if isinstance(error, LoaderError | DumpError | ChunkError):
        return error
    return error


def dump_identity(path: Path, extra: str) -> tuple[str, str]:
    """A fingerprint of the dump (path, sizes, modification times) so a resume only continues the same dump."""
    resolved = path.resolve()
    digest = hashlib.sha256(f"{resolved}\0{extra}".encode())
    files = sorted(resolved.rglob("*")) if resolved.is_dir() else [resolved]
    for file in files:
        if file.is_file():
            stat = file.stat()
            digest.update(f"{file.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest(), str(resolved)


# --- directory dumps ----------------------------------------------------------------------------------


def load_plan(load: Load, plan: DumpPlan) -> LoaderOutcome:
    base_state = sessions.state_of(plan.session)
    load.bytes_total = plan.data_bytes
    load.tables_total = len(plan.tables)
    for warning in plan.warnings:
        load.on_log(f"warning: {warning}")

    # 1. Databases, tables, view placeholders.
    load.control.defer_indexes_for = lambda _key, _create_table: load.options.defer_indexes
    ddl_done = "ddl" in load.resume.steps
    if load.resume.resumed and not ddl_done:
        _drop_plan_tables(load, plan)  # created by the run that stopped before any row: start them again
    for script in [*plan.before, *(s for t in plan.tables for s in t.ddl)]:
        load.pump()
        if ddl_done:
            load.control.replay_script(script, base_state, defer=DEFER_ALL_BUT_VIEWS)
        else:
            load.control.run_script(script, base_state, defer=DEFER_ALL_BUT_VIEWS, resuming=load.resume.resumed)
    if not ddl_done:
        load.markers.step_done("ddl")

    # 2. Rows, largest tables first; each table's indexes are built once its rows are in.
    load.enter("data")
    load.start_workers()
    for table in sorted(plan.tables, key=lambda t: -t.data_bytes):
        key = table.key
        load.counters.note_table(key)
        if f"table:{_name(key)}" in load.resume.steps:
            rows = sum(r for c, (r, _) in load.resume.chunks.items() if c.startswith(f"{_name(key)}#"))
            load.counters.add(key, rows, table.data_bytes, chunks=0)
            continue
        load.prepare_table(key)
        state = base_state.with_database(table.database)
        create_table = load.control.created.get(key)
        if create_table is not None and loads_alone(create_table, table.data, load.autoinc_lock_mode):
            load.scheduler.one_at_a_time(key)
            load.on_log(
                f"`{key[0]}`.`{key[1]}`: loaded by one connection at a time, with LOAD DATA (it has an "
                "AUTO_INCREMENT column, whose lock a LOAD DATA holds until it ends)"
            )
        for file in table.data:
            for work in _work_for(load, key, file, state):
                load.scheduler.add(work)
        load.scheduler.after_data(key, load.table_done_task(key))
        load.scheduler.close(key)
    load.scheduler.close_all()
    load.wait_until(load.scheduler.finished)
    load.stop_workers()
    _check_expected_rows(load, plan)

    # 3. Routines and events, views, triggers, closing scripts.
    load.enter("after-data")
    deferred = load.control.deferred
    steps: list[tuple[str, Callable[[], None]]] = []
    routines = [d for d in enumerate(deferred) if d[1].what not in ("VIEW", "TRIGGER")]
    steps += _deferred_steps(load, routines)
    steps += _script_steps(load, plan.routines, base_state)
    views = [d for d in deferred if d.what == "VIEW"]
    steps.append(("views", functools.partial(_create_views, load, plan.views, views, base_state)))
    steps += _deferred_steps(load, [d for d in enumerate(deferred) if d[1].what == "TRIGGER"])
    steps += _script_steps(load, plan.triggers, base_state)
    steps += _script_steps(load, plan.after, base_state)
    load.run_post_steps(steps)
    return load.finish(plan.format, plan.databases, plan.warnings)


def _work_for(load: Load, key: TableKey, file: DataFile, state: SessionState) -> list[Task | Source]:
    """How a data file is loaded: in chunks cut before loading (a plain file) or while it is read, or (a
    dialect whose rows cannot be found without parsing) whole, in one transaction. Nothing for what a
    resumed load already has."""
    chunk_size, done, prefix = load.resume.chunk_size, load.resume.chunks, _name(key)
    if file.kind is DataKind.DELIMITED and file.splittable:
        chunks = plain_file_chunks(key, file, chunk_size, state, done, load.counters, prefix)
        if chunks is not None:
            return list(chunks)
        return [DelimitedSource(key, file, chunk_size, state, done, load.counters, prefix)]
    if file.kind is DataKind.DELIMITED:
        chunk = f"{prefix}#{file.path.name}"
        if chunk in done:
            load.counters.add(key, done[chunk][0], file.size)
            return []
        return [DelimitedTask(key, file.size, chunk, file, state)]
    return [SqlSource(key, file, chunk_size, state, done, load.counters, prefix)]


def _drop_plan_tables(load: Load, plan: DumpPlan) -> None:
    for table in plan.tables:
        with contextlib.suppress(pymysql.err.MySQLError):
            load.control.query(b"DROP TABLE IF EXISTS " + qualified(table.database, table.name))


def _check_expected_rows(load: Load, plan: DumpPlan) -> None:
    problems = []
    for table in plan.tables:
        if table.expected_rows is None:
            continue
        loaded = load.counters.rows_by_table.get(table.key, 0)
        if loaded != table.expected_rows:
            problems.append(f"`{table.database}`.`{table.name}`: metadata {table.expected_rows}, files {loaded}")
    if problems:
        raise MetadataMismatchError(
            f"the dump's metadata disagrees with its data files ({'; '.join(problems[:5])}): a chunk file is "
            "missing or was changed after the dump; the restore is incomplete (the target keeps the schema "
            f"`{SCHEMA}` to show it); dump again or copy the missing files"
        )


def _deferred_steps(load: Load, items: list[tuple[int, Deferred]]) -> list[tuple[str, Callable[[], None]]]:
    resuming = load.resume.resumed
    return [
        (f"deferred:{index}", functools.partial(load.control.run_deferred, item, resuming=resuming))
        for index, item in items
    ]


def _script_steps(load: Load, scripts: list[Script], state: SessionState) -> list[tuple[str, Callable[[], None]]]:
    resuming = load.resume.resumed
    return [
        (
            f"script:{script.name}",
            functools.partial(load.control.run_script, script, state, defer=DEFER_NOTHING, resuming=resuming),
        )
        for script in scripts
    ]


def _create_views(load: Load, scripts: list[Script], deferred: list[Deferred], state: SessionState) -> None:
    """Views may use other views: create those that can be, then try the rest again until none is left."""
    pending: list[Callable[[], None]] = [
        functools.partial(load.control.run_script, script, state, defer=DEFER_NOTHING, resuming=True)
        for script in scripts
    ]
    pending += [functools.partial(load.control.run_deferred, item, resuming=True) for item in deferred]
    while pending:
        failed: list[Callable[[], None]] = []
        last_error: LoaderError | None = None
        for create in pending:
            load.pump()
            try:
                create()
            except LoaderError as error:
                if getattr(error, "code", None) not in _VIEW_DEPENDENCY_CODES:
                    raise
                failed.append(create)
                last_error = error
        if len(failed) == len(pending):
            assert last_error is not None
            raise last_error
        pending = failed


# --- a mysqldump .sql split while it streams ------------------------------------------------------------


@dataclass
class _Batch:
    key: TableKey
    state: SessionState
    statements: list[Statement] = field(default_factory=list)  # read from a compressed dump: kept in memory
    places: list[_Place] = field(default_factory=list)  # in a plain dump: where to read them again
    size: int = 0


@dataclass(frozen=True)
class _Place:
    offset: int
    length: int
    rows: int
    line: int


def _read_places(path: Path, places: list[_Place]) -> list[Statement]:
    """The INSERT statements of a batch, read again from a plain dump (they follow each other in it)."""
    start = places[0].offset
    with path.open("rb") as dump:
        dump.seek(start)
        data = dump.read(places[-1].offset + places[-1].length - start)
    return [
        Statement(data[p.offset - start : p.offset - start + p.length], p.line, Kind.INSERT, p.rows) for p in places
    ]


def load_sql_stream(load: Load, dump: Path, database: str | None) -> LoaderOutcome:
    """Restore a mysqldump .sql (plain, .gz or .zst) with N connections.

    The dump is read once. Session and DDL statements run on the control connection in dump order;
    INSERT statements are gathered per table into chunks of about chunk_size bytes that the loading
    connections commit in parallel; views, triggers, routines and events wait for the end of the data.
    A statement of any other kind (UPDATE, ALTER ...) waits until the rows before it are in.

    A plain dump is read ahead to its end at once: a chunk is only where its statements are in the file
    (read again by the connection that loads it), so the connections can work on different tables as they
    do for a dump directory. Two connections inserting into one table in key order wait on each other's
    page latches: measured on sysbench INSERTs, 54-74 s for the same CPU that took 45-54 s spread over
    tables. A compressed dump cannot be read at an offset: its chunks are kept in memory, read ahead by
    only `threads` chunks, and the connections share the table the dump is at.
    """
    stream = _Stream(load, database)
    load.start_workers()
    load.enter("data")
    try:
        with open_dump(dump) as reader:
            load.bytes_total = reader.total_bytes
            stream.reader_bytes = lambda: reader.compressed_bytes_read
            if reader.compression == "plain":
                stream.plain_dump = dump
            splitter = ScriptSplitter()
            for block in reader.chunks(1 << 20):
                for statement in splitter.feed(block):
                    stream.handle(statement)
                load.pump()
            for statement in splitter.finish():
                stream.handle(statement)
    except ScriptError as error:
        raise LoaderError(f"{dump.name}: {error}") from error
    stream.end()
    load.wait_until(load.scheduler.finished)
    load.stop_workers()
    load.enter("after-data")
    resuming = load.resume.resumed
    load.run_post_steps(
        [
            (f"deferred:{index}", functools.partial(load.control.run_deferred, item, resuming=resuming))
            for index, item in enumerate(load.control.deferred)
        ]
    )
    with load.counters.lock:
        load.counters.bytes_done = load.bytes_total
    return load.finish("mysqldump", stream.databases, [])


class _Stream:
    def __init__(self, load: Load, database: str | None) -> None:
        self.load = load
        self.control = load.control
        self.ordinal = -1
        self.batch: _Batch | None = None
        self.batches_by_table: dict[TableKey, int] = {}
        self.open_tables: list[TableKey] = []
        self.databases: list[str] = []
        self.reader_bytes: Callable[[], int] = lambda: 0
        self.plain_dump: Path | None = None  # set when the dump can be read again at an offset
        self._accounted = 0  # compressed bytes already counted in a chunk or a control statement
        self.control.use(SessionState((), None))
        self.control.defer_indexes_for = lambda _key, _create_table: load.options.defer_indexes
        if database is not None:
            quoted = f"`{database.replace('`', '``')}`".encode()
            self.control.query(b"CREATE DATABASE IF NOT EXISTS " + quoted)
            self.control.query(b"USE " + quoted)
            self.control.database = database
            self._note_database(database)

    def handle(self, statement: Statement) -> None:
        self.ordinal += 1
        if statement.kind is Kind.INSERT:
            self._add_rows(statement)
            return
        self.flush()
        classified = classify(statement.text)
        action = classified.action
        if action is Action.SESSION:
            self.control.execute(statement, "the dump", defer=DEFER_ALL, resuming=False)
            if classified.what == "USE" and classified.name:
                self._note_database(classified.name)
            return
        if action in (Action.LOCK, Action.KEYS, Action.POST_DATA):
            self.control.execute(statement, "the dump", defer=DEFER_ALL, resuming=False)
            return
        resume = self.load.resume
        if resume.resumed and self.ordinal <= resume.control_done:
            self._replay(statement, classified)
            return
        if action is not Action.CREATE_DATABASE:
            self._close_open_tables()  # the dump has moved on from the tables before
        if action is Action.DROP_TABLE:
            self.load.wait_until(lambda: self.load.scheduler.idle(self._key(classified.database, classified.name)))
        elif action not in (Action.CREATE_TABLE, Action.CREATE_DATABASE):
            self.load.wait_until(lambda: self.load.scheduler.idle())  # UPDATE, ALTER ...: after the rows before it
        resuming = resume.resumed and self.ordinal == resume.control_done + 1
        self.control.execute(statement, "the dump", defer=DEFER_ALL, resuming=resuming)
        if action is Action.CREATE_TABLE:
            self._opened(self._key(classified.database, classified.name))
        elif action is Action.CREATE_DATABASE and classified.name:
            self._note_database(classified.name)
        self.load.markers.control_done(self.ordinal)
        self._account_control()

    def _replay(self, statement: Statement, classified: Any) -> None:
        """A statement that ran before the load stopped: learn from it, do not run it again."""
        if classified.action is Action.CREATE_TABLE:
            self._close_open_tables()
            self.control.plan_indexes(statement.text, classified)
            self._opened(self._key(classified.database, classified.name))
        elif classified.action is Action.CREATE_DATABASE and classified.name:
            self._note_database(classified.name)
        self._account_control()

    def _opened(self, key: TableKey) -> None:
        self.load.counters.note_table(key)
        self.load.tables_total += 1
        self.open_tables.append(key)
        self.load.prepare_table(key)
        if self.plain_dump is not None:
            # Its rows wait until the dump has moved past the table: then all its chunks are known, and the
            # connections sharing it can work from different parts of it (see scheduler.py).
            self.load.scheduler.hold(key)

    def _close_open_tables(self) -> None:
        for key in self.open_tables:
            finished = f"table:{_name(key)}" in self.load.resume.steps
            self.load.scheduler.hold(key, False)
            if not finished:
                self.load.scheduler.after_data(key, self.load.table_done_task(key))
            self.load.scheduler.close(key)
        self.open_tables = []

    def _key(self, database: str | None, name: str | None) -> TableKey:
        return database or self.control.database, name or ""

    def _note_database(self, name: str) -> None:
        if name not in self.databases:
            self.databases.append(name)

    def _add_rows(self, statement: Statement) -> None:
        assert statement.table is not None
        key = self._key(*statement.table)
        if key[0] is None:
            raise LoaderError(
                f"the INSERT at line {statement.line} of the dump names no database and none was chosen before "
                "it: restore the dump into a database (choose one for the restore)"
            )
        state = self.control.snapshot()
        if self.batch is not None and (self.batch.key != key or self.batch.state != state):
            self.flush()
        if self.batch is None:
            self.batch = _Batch(key, state)
        if self.plain_dump is not None:
            self.batch.places.append(_Place(statement.offset, len(statement.text), statement.rows, statement.line))
        else:
            self.batch.statements.append(statement)
        self.batch.size += len(statement.text)
        if self.batch.size >= self.load.resume.chunk_size:
            self.flush()

    def flush(self) -> None:
        batch, self.batch = self.batch, None
        if batch is None:
            return
        key = batch.key
        number = self.batches_by_table.get(key, 0)
        self.batches_by_table[key] = number + 1
        chunk = f"{_name(key)}#{number}"
        size = self._take_bytes()
        done = self.load.resume.chunks.get(chunk)
        if done is not None:
            self.load.counters.add(key, done[0], size)
            return
        if self.plain_dump is not None:
            statements = functools.partial(_read_places, self.plain_dump, batch.places)
            self.load.scheduler.add(SqlTask(key, size, chunk, batch.state, statements))
            return
        self.load.scheduler.add(SqlTask(key, size, chunk, batch.state, functools.partial(list, batch.statements)))
        # Read ahead only as far as the connections can use: memory stays at a few chunks.
        limit = max(self.load.options.threads, 1) * self.load.resume.chunk_size
        while self.load.scheduler.queued_bytes() > limit:
            self.load.pump()
            self.load.scheduler.wait(STOP_CHECK_SECONDS)

    def _take_bytes(self) -> int:
        now = self.reader_bytes()
        size, self._accounted = now - self._accounted, now
        return size

    def _account_control(self) -> None:
        size = self._take_bytes()
        with self.load.counters.lock:
            self.load.counters.bytes_done += size

    def end(self) -> None:
        self.flush()
        self._close_open_tables()
        # Tables whose data came without a CREATE TABLE in the dump still get their "done" step.
        for key in list(self.batches_by_table):
            self.load.scheduler.close(key)
        self.load.scheduler.close_all()
