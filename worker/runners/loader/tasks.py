"""The loading connections and the pieces of work they run: a chunk of rows in one transaction, or an index
build. Each chunk commits together with its marker (see markers.py).

Rows for LOAD DATA LOCAL are sent from memory by the connection's own thread (see load_data), block by
block as they are read and decompressed, so no chunk is written to disk and a compressed file never needs
to be decompressed whole.

Why PyMySQL connections rather than N `mysql` client processes: measured on the sysbench dump (800 MB), the
client spends 6.6 s of CPU parsing every byte for delimiters, PyMySQL 3.2 s for the same INSERTs (we split
once, in sql_script.py), and LOAD DATA costs both the same (0.6-0.7 s); on this CPU-bound machine every
client CPU second is taken from the server.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import queue
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql
from pymysql.connections import MySQLResult
from pymysql.constants import COMMAND

from app.backups.detect import HEAD_MAGIC_BYTES, compression_of_head
from worker.runners.dump_stream import DumpError, open_dump
from worker.runners.loader import delimited
from worker.runners.loader.control import explain
from worker.runners.loader.markers import Markers
from worker.runners.loader.plan import DataFile
from worker.runners.loader.session import SessionState
from worker.runners.loader.sql_script import Kind, ScriptSplitter, Statement, TableKey
from worker.runners.loader.statements import Action, classify, qualified, quote_name, replace_load_data_file

if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[Any]
READ_BLOCK = 1 << 20
_SEND_PACKET = 1 << 18  # far below any max_allowed_packet a server runs with (16 MB by default)
_LOCAL_FILE_NAME = "restorescope-rows"  # the name LOAD DATA LOCAL statements give: the rows come from memory
# Errors after which the same chunk succeeds when run again: its transaction was rolled back whole.
_RETRYABLE = frozenset({1205, 1213})  # lock wait timeout, deadlock
RETRIES = 3
# mydumper's own LOAD DATA clause for its .dat files is the default dialect: rows can be counted by newlines.
_DEFAULT_DIALECT_CLAUSE = re.compile(
    rb"FIELDS\s+TERMINATED\s+BY\s+'\\t'\s+ENCLOSED\s+BY\s+''\s+ESCAPED\s+BY\s+'\\\\\\\\'\s+"
    rb"LINES\s+STARTING\s+BY\s+''\s+TERMINATED\s+BY\s+'\\n'",
    re.IGNORECASE,
)


class ChunkError(Exception):
    """A chunk could not be loaded; the message names the file (or dump line) and says why."""


class DataCutShortError(DumpError):
    """Rows end in the middle of a row, or a file holds fewer bytes than the dump's metadata promises."""

    @classmethod
    def mid_row(cls, path: Path) -> DataCutShortError:
        return cls(f"{path.name} ends in the middle of a row: the file is cut short; copy the dump again")

    @classmethod
    def size(cls, path: Path, found: int, expected: int) -> DataCutShortError:
        return cls(
            f"{path.name} holds {found} bytes of rows but the dump's metadata says {expected}: the file was "
            "changed or cut after the dump; copy the dump again"
        )


@dataclass
class Counters:
    """What the connections finished, read by the driver for progress; guarded by `lock`."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    bytes_done: int = 0
    rows_done: int = 0
    chunks_done: int = 0
    rows_by_table: dict[TableKey, int] = field(default_factory=dict)
    log_lines: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue)

    def add(self, table: TableKey, rows: int, size: int, chunks: int = 1) -> None:
        with self.lock:
            self.bytes_done += size
            self.rows_done += rows
            self.chunks_done += chunks
            self.rows_by_table[table] = self.rows_by_table.get(table, 0) + rows

    def note_table(self, table: TableKey) -> None:
        with self.lock:
            self.rows_by_table.setdefault(table, 0)


class Worker:
    """One loading connection with the session the load needs."""

    def __init__(self, connection: Connection, counters: Counters, base: list[bytes]) -> None:
        self.connection = connection
        self.counters = counters
        self.thread_id: int = connection.thread_id()  # type: ignore[no-untyped-call]
        self._base = base
        self._session: SessionState | None = None
        self.busy = False  # inside a statement the driver may have to KILL on cancel
        for statement in base:
            connection.query(statement)

    def use(self, state: SessionState) -> None:
        if state == self._session:
            return
        for statement in [*state.statements(), *self._base]:
            self.connection.query(statement)
        self._session = state

    def forget_session(self) -> None:
        """A chunk ran SET statements of its own: set the session again before the next one."""
        self._session = None

    def log(self, line: str) -> None:
        self.counters.log_lines.put(line)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


def base_session_statements(connection: Connection, log: Callable[[str], None]) -> list[bytes]:
    """Session settings for loading, kept only where the server accepts them.

    foreign_key_checks=0: tables load in any order and in parallel, as mysqldump's own header does.
    unique_checks stays 1 on purpose: MariaDB 10.6+ turns an insert into an empty table with both checks
    off into its "bulk insert" mode, which locks the whole table (two connections loading chunks of one
    table then deadlock) and was slower here (sysbench LOAD DATA: 57 s of server CPU instead of 38 s).
    Measured again with the shape it wants, one sysbench table of 1M rows in one LOAD DATA and one
    transaction (MariaDB 10.11, server defaults): 9.0 s of server CPU instead of 3.9 s without the secondary
    index, 11.9 s instead of 6.8 s with it, and twice the wall time; the rows are buffered and the indexes
    built when the statement ends, partly on a background thread. Undo logging skipped does not pay for
    that here, so chunks keep their normal transactions (and a resume its chunk-sized steps).
    sql_log_bin=0: the restored rows are not replicated; it needs SUPER, so it is skipped with a note
    on a target where the user lacks it (and the binary log is usually off in a sandbox anyway).
    """
    statements = [b"SET SESSION foreign_key_checks = 0, unique_checks = 1"]
    try:
        connection.query(b"SET SESSION sql_log_bin = 0")
        statements.append(b"SET SESSION sql_log_bin = 0")
    except pymysql.err.MySQLError as error:
        log(f"note: could not turn off binary logging for the restore ({error.args[-1]}); rows are logged")
    return statements


# --- running a chunk in one transaction -----------------------------------------------------------


def in_transaction(worker: Worker, chunk: str, size: int, load: Callable[[], int]) -> int:
    """Run `load` (returns the rows it loaded) and commit it with the chunk's marker; retry on deadlock."""
    for attempt in range(1, RETRIES + 1):
        connection = worker.connection
        connection.begin()
        try:
            worker.busy = True
            rows = load()
            statement, arguments = Markers.chunk_statement(chunk, rows, size)
            with connection.cursor() as cursor:
                cursor.execute(statement, arguments)
            connection.commit()
            return rows
        except pymysql.err.MySQLError as error:
            _rollback(connection)
            if error.args and error.args[0] in _RETRYABLE and attempt < RETRIES:
                worker.log(f"{chunk}: {error.args[-1]}; loading the chunk again (attempt {attempt + 1})")
                continue
            raise
        except BaseException:
            _rollback(connection)
            raise
        finally:
            worker.busy = False
    raise AssertionError("unreachable")


def _rollback(connection: Connection) -> None:
    with contextlib.suppress(Exception):
        connection.rollback()


# --- LOAD DATA LOCAL from memory -------------------------------------------------------------------


@dataclass
class _Feed:
    sent: int = 0
    last_byte: bytes = b""
    error: BaseException | None = None


def load_data(
    connection: Connection, statement_for: Callable[[str], bytes], data: Iterable[bytes]
) -> tuple[int, _Feed]:
    """Run the LOAD DATA LOCAL statement that `statement_for(name)` builds and send `data` (blocks of rows, read
    lazily) as its file.

    PyMySQL can only send a file it opens by name, 16 KB per packet; the rows are in memory or come out of
    a decompressor, so they used to go through a pipe and a feeder thread. Sent here, from this thread, in
    packets of _SEND_PACKET bytes written without a copy, the sysbench --tab dump (800 MB) took 1.6 s
    of client CPU (user + system) instead of 2.3-2.6 s; on this CPU-bound machine every client cycle is taken from the
    server. It uses PyMySQL's protocol methods (_execute_command, _read_packet, _write_bytes: PyMySQL is
    pinned); the exchange is the one its own LoadLocalFile makes: the statement, the server's request naming
    the file, the data packets, an empty packet, the server's OK or error.
    """
    feed = _Feed()
    connection._execute_command(COMMAND.COM_QUERY, statement_for(_LOCAL_FILE_NAME))  # type: ignore[attr-defined]
    connection._result = None  # type: ignore[attr-defined]
    result = MySQLResult(connection)
    request = connection._read_packet()  # type: ignore[no-untyped-call]  # raises the server's refusal
    if not request.is_load_local_packet():
        result._read_ok_packet(request)  # type: ignore[attr-defined]
        raise ChunkError("the server did not ask for the rows of a LOAD DATA LOCAL statement")
    try:
        for block in data:
            view = memoryview(block)
            for start in range(0, len(view), _SEND_PACKET):
                _send_packet(connection, view[start : start + _SEND_PACKET])
            feed.sent += len(block)
            if block:
                feed.last_byte = block[-1:]
    except pymysql.err.MySQLError:
        raise  # the connection is lost: nothing more can be said to the server
    except BaseException as error:  # a truncated or corrupt compressed file: the chunk must not commit
        feed.error = error
    connection.write_packet(b"")  # the end of the file: the server answers for the statement
    answer = connection._read_packet()  # type: ignore[no-untyped-call]
    result._read_ok_packet(answer)  # type: ignore[attr-defined]
    connection._result = result  # type: ignore[attr-defined]  # warning_count and friends come from here
    connection._affected_rows = result.affected_rows  # type: ignore[attr-defined]
    if feed.error is not None:
        raise feed.error
    return result.affected_rows or 0, feed


def _send_packet(connection: Connection, payload: memoryview) -> None:
    """One protocol packet: its 3-byte length and sequence number, then the payload as it is (no copy)."""
    sequence = connection._next_seq_id  # type: ignore[attr-defined]
    connection._write_bytes(len(payload).to_bytes(3, "little") + bytes([sequence]))  # type: ignore[attr-defined]
    connection._write_bytes(payload)  # type: ignore[attr-defined]
    connection._next_seq_id = (sequence + 1) % 256  # type: ignore[attr-defined]


def read_file(path: Path) -> Iterator[bytes]:
    """The decompressed content of a dump file, in blocks; raises DumpError on a cut or corrupt file."""
    with open_dump(path) as reader:
        yield from reader.chunks(READ_BLOCK)


def load_statement(table: TableKey, file: DataFile, path: str) -> bytes:
    database, name = table
    assert database is not None and file.dialect is not None
    columns = ""
    assignments = ""
    if file.columns:
        decode = dict(file.decode_columns)
        variables = {c: f"@c{index}" for index, c in enumerate(file.columns)}
        targets = [variables[c] if c in decode else quote_name(c) for c in file.columns]
        columns = " (" + ", ".join(targets) + ")"
        if decode:
            sets = [f"{quote_name(c)} = {function}({variables[c]})" for c, function in file.decode_columns]
            assignments = " SET " + ", ".join(sets)
    return (
        f"LOAD DATA LOCAL INFILE {delimited.sql_string(path)} INTO TABLE {qualified(database, name).decode()} "
        f"CHARACTER SET {file.character_set} {file.dialect.clause()}{columns}{assignments}"
    ).encode()


# --- the tasks ----------------------------------------------------------------------------------


@dataclass
class DelimitedTask:
    """Rows for LOAD DATA: a piece cut from a file (in memory) or a whole file (streamed)."""

    table: TableKey
    size: int
    chunk: str
    file: DataFile
    session: SessionState
    piece: list[bytes] | None = None  # the chunk's rows as read, in blocks; None: stream the whole file
    span: tuple[int, int] | None = None  # or where its rows are in a plain file, read when the chunk runs

    def run(self, worker: Worker) -> int:
        worker.use(self.session)

        def load() -> int:
            piece = self.piece if self.span is None else _read_span(self.file.path, *self.span)
            data: Iterable[bytes] = piece if piece is not None else read_file(self.file.path)
            try:
                affected, feed = load_data(
                    worker.connection, lambda path: load_statement(self.table, self.file, path), data
                )
            except pymysql.err.MySQLError as error:
                if error.args and error.args[0] in _RETRYABLE:
                    raise
                raise explain(error, f"the rows of {self.file.path.name} (chunk {self.chunk})") from error
            self._check(feed)
            if self.file.splittable and piece is not None:
                return delimited.count_rows_in_blocks(piece)
            return affected

        rows = in_transaction(worker, self.chunk, self.size, load)
        _log_warnings(worker, self.chunk)
        worker.counters.add(self.table, rows, self.size)
        return rows

    def _check(self, feed: _Feed) -> None:
        if self.file.splittable and feed.sent and feed.last_byte != b"\n":
            raise DataCutShortError.mid_row(self.file.path)
        whole_file = self.piece is None and self.span is None
        if whole_file and self.file.expected_bytes is not None and feed.sent != self.file.expected_bytes:
            raise DataCutShortError.size(self.file.path, feed.sent, self.file.expected_bytes)


@dataclass
class SqlTask:
    """INSERT statements (and the SET statements before them) run in one transaction; a LOAD DATA
    statement among them reads `rows_file` (mydumper's .sql + .dat pairs)."""

    table: TableKey
    size: int
    chunk: str
    session: SessionState
    statements: Callable[[], Iterable[Statement]]
    rows_file: Path | None = None
    where: str = "the dump"  # what line numbers refer to: the dump, or a data file's name

    def run(self, worker: Worker) -> int:
        worker.use(self.session)
        changes_session = False

        def load() -> int:
            nonlocal changes_session
            rows = 0
            for statement in self.statements():
                try:
                    if statement.kind is Kind.INSERT:
                        worker.connection.query(statement.text)
                        rows += statement.rows
                        continue
                    action = classify(statement.text).action
                    if action is Action.LOAD_DATA:
                        rows += self._load_rows_file(worker, statement)
                    elif action in (Action.SESSION, Action.OTHER):
                        changes_session = changes_session or action is Action.SESSION
                        worker.connection.query(statement.text)
                    # DDL or LOCK TABLES in a data file: not what a data file holds, and not for a parallel load
                except pymysql.err.MySQLError as error:
                    if error.args and error.args[0] in _RETRYABLE:
                        raise
                    raise explain(error, f"the statement at line {statement.line} of {self.where}") from error
            return rows

        try:
            rows = in_transaction(worker, self.chunk, self.size, load)
        finally:
            if changes_session:
                worker.forget_session()
        _log_warnings(worker, self.chunk)
        worker.counters.add(self.table, rows, self.size)
        return rows

    def _load_rows_file(self, worker: Worker, statement: Statement) -> int:
        if self.rows_file is None:
            raise ChunkError(f"{self.chunk}: a LOAD DATA statement without its rows file")
        rows_file = self.rows_file
        counted = _DEFAULT_DIALECT_CLAUSE.search(statement.text) is not None
        tally = _RowTally()

        def data() -> Iterator[bytes]:
            for block in read_file(rows_file):
                if counted:
                    tally.add(block)
                yield block

        affected, _feed = load_data(
            worker.connection, lambda path: replace_load_data_file(statement.text, path)[0], data()
        )
        return tally.rows if counted else affected


class _RowTally:
    """Counts default-dialect rows across blocks (an escaped newline may straddle two blocks)."""

    def __init__(self) -> None:
        self.rows = 0
        self._tail = b""

    def add(self, block: bytes) -> None:
        data = self._tail + block
        cut = data.rfind(b"\n") + 1
        self.rows += delimited.count_rows(data[:cut])
        self._tail = data[cut:]


@dataclass
class StepTask:
    """Statements that run once a table's data is in (its deferred index builds), then marked done."""

    table: TableKey
    step: str
    statements: list[bytes]
    markers: Markers | None = None
    size: int = 0
    done: Callable[[str], None] | None = None

    def run(self, worker: Worker) -> int:
        worker.busy = True
        try:
            for statement in self.statements:
                try:
                    worker.connection.query(statement)
                except pymysql.err.MySQLError as error:
                    if error.args and error.args[0] == 1061:  # duplicate key name: built before a crash
                        continue
                    raise
        finally:
            worker.busy = False
        if self.done is not None:
            self.done(self.step)
        return 0


def _log_warnings(worker: Worker, chunk: str) -> None:
    count = worker.connection.warning_count if hasattr(worker.connection, "warning_count") else 0
    if not count:
        return
    with worker.connection.cursor() as cursor:
        cursor.execute("SHOW WARNINGS LIMIT 3")
        shown = "; ".join(f"{level} {code}: {message}" for level, code, message in cursor.fetchall())
    worker.log(f"{chunk}: the server reported {count} warning(s), first: {shown}")


# --- cutting big files into chunks ------------------------------------------------------------------


def _read_span(path: Path, start: int, end: int) -> list[bytes]:
    with path.open("rb") as file:
        file.seek(start)
        data = file.read(end - start)
    if len(data) != end - start:
        raise DataCutShortError(f"{path.name} became shorter while it was loaded: copy the dump again")
    return [data]


def plain_file_chunks(
    table: TableKey,
    file: DataFile,
    chunk_size: int,
    session: SessionState,
    done: dict[str, tuple[int, int]],
    counters: Counters,
    prefix: str,
) -> list[DelimitedTask] | None:
    """The chunks of an uncompressed default-dialect file, cut where DelimitedSource would cut it but before
    any is loaded, each read when it runs: the connections sharing the table can then work from different
    parts of the file (see scheduler.py). None for a compressed file, which can only be read in order."""
    with file.path.open("rb") as reader:
        if compression_of_head(reader.read(HEAD_MAGIC_BYTES)) is not None:
            return None
        size = os.fstat(reader.fileno()).st_size
        if size and os.pread(reader.fileno(), 1, size - 1) != b"\n":
            raise DataCutShortError.mid_row(file.path)
        cuts = delimited.row_cuts(reader, size, chunk_size)
    if file.expected_bytes is not None and size != file.expected_bytes:
        raise DataCutShortError.size(file.path, size, file.expected_bytes)
    tasks = []
    for index, (start, end) in enumerate(itertools.pairwise(cuts)):
        chunk = f"{prefix}#{file.path.name}#{index}"
        if chunk in done:
            counters.add(table, done[chunk][0], end - start)
            continue
        tasks.append(DelimitedTask(table, end - start, chunk, file, session, span=(start, end)))
    return tasks


class DelimitedSource:
    """Cuts a default-dialect file into chunks of about `chunk_size` bytes at row ends while reading it."""

    def __init__(
        self,
        table: TableKey,
        file: DataFile,
        chunk_size: int,
        session: SessionState,
        done: dict[str, tuple[int, int]],
        counters: Counters,
        prefix: str,
    ) -> None:
        self.table = table
        self._prefix_name = f"{prefix}#{file.path.name}"
        self._file = file
        self._chunk_size = chunk_size
        self._session = session
        self._done = done
        self._counters = counters
        self._lock = threading.Lock()
        self._blocks: Iterator[bytes] | None = None
        self._reader_bytes = 0
        self._parts: list[bytes] = []  # read and not yet handed out, joined only when a chunk is cut
        self._parts_bytes = 0
        self._index = 0
        self._finished = False
        self._sent = 0
        self._taken = 0  # compressed bytes already handed out in chunks

    @property
    def remaining(self) -> int:
        return max(self._file.size - self._taken, 0)

    def cut(self) -> DelimitedTask | None:
        with self._lock:
            while True:
                piece = self._next_piece()
                if piece is None:
                    self._account_rest()
                    return None
                chunk = f"{self._prefix_name}#{self._index}"
                self._index += 1
                done = self._finished and not self._parts_bytes
                now = self._file.size if done else min(self._reader_bytes, self._file.size)
                size, self._taken = now - self._taken, now
                if chunk in self._done:
                    rows, _ = self._done[chunk]
                    self._counters.add(self.table, rows, size)
                    continue
                return DelimitedTask(self.table, size, chunk, self._file, self._session, piece)

    def _account_rest(self) -> None:
        """Bytes no chunk covered (an empty file, the end of a compressed stream) still count as done."""
        rest, self._taken = self._file.size - self._taken, self._file.size
        if rest > 0:
            self._counters.add(self.table, 0, rest, chunks=0)

    def _next_piece(self) -> list[bytes] | None:
        """The next chunk as the blocks it was read in (joining 64 MB would cost a copy for nothing): whole
        blocks up to about chunk_size, then the first one cut just after a row end."""
        if self._blocks is None:
            self._blocks = self._read()
        while not self._finished and self._parts_bytes < self._chunk_size:
            self._read_block()
        if not self._parts_bytes:
            self._check_total()
            return None
        index, offset = self._locate(min(self._chunk_size, self._parts_bytes) - 1)
        while True:
            cut = delimited.row_end_in_blocks(self._parts, index, offset)
            if cut is not None:
                break
            if index + 1 < len(self._parts):
                index, offset = index + 1, 0
                continue
            if self._finished:
                if not self._parts[-1].endswith(b"\n"):
                    raise DataCutShortError.mid_row(self._file.path)
                cut = len(self._parts[-1])
                break
            self._read_block()  # the row goes on past what was read
        last = self._parts[index]
        piece = [*self._parts[:index], last[:cut]] if cut < len(last) else self._parts[: index + 1]
        rest = ([last[cut:]] if cut < len(last) else []) + self._parts[index + 1 :]
        sent = sum(len(b) for b in piece)
        self._parts, self._parts_bytes = rest, self._parts_bytes - sent
        self._sent += sent
        if self._finished and not rest:
            self._check_total()
        return piece

    def _read_block(self) -> None:
        assert self._blocks is not None
        block = next(self._blocks, None)
        if block is None:
            self._finished = True
            return
        self._parts.append(block)
        self._parts_bytes += len(block)

    def _locate(self, position: int) -> tuple[int, int]:
        """(block index, offset in it) of a position in the blocks read."""
        for index, block in enumerate(self._parts):
            if position < len(block):
                return index, position
            position -= len(block)
        return len(self._parts) - 1, len(self._parts[-1])

    def _read(self) -> Iterator[bytes]:
        with open_dump(self._file.path) as reader:
            for block in reader.chunks(READ_BLOCK):
                self._reader_bytes = reader.compressed_bytes_read
                yield block
            self._reader_bytes = reader.compressed_bytes_read

    def _check_total(self) -> None:
        expected = self._file.expected_bytes
        if expected is not None and self._sent != expected:
            raise DataCutShortError.size(self._file.path, self._sent, expected)


class SqlSource:
    """Cuts a file of INSERT statements into chunks of whole statements; every chunk starts with the SET
    statements that came before it in the file, so it runs in the session the file set up."""

    def __init__(
        self,
        table: TableKey,
        file: DataFile,
        chunk_size: int,
        session: SessionState,
        done: dict[str, tuple[int, int]],
        counters: Counters,
        prefix: str,
    ) -> None:
        self.table = table
        self._prefix_name = f"{prefix}#{file.path.name}"
        self._file = file
        self._chunk_size = chunk_size
        self._session = session
        self._done = done
        self._counters = counters
        self._lock = threading.Lock()
        self._statements: Iterator[Statement] | None = None
        self._reader_bytes = 0
        self._prefix: list[Statement] = []
        self._index = 0
        self._taken = 0
        self._exhausted = False

    @property
    def remaining(self) -> int:
        return max(self._file.total_size - self._taken, 0)

    def cut(self) -> SqlTask | None:
        with self._lock:
            while True:
                batch = self._next_batch()
                if batch is None:
                    self._account_rest()
                    return None
                chunk = f"{self._prefix_name}#{self._index}"
                self._index += 1
                # The rows file a LOAD DATA statement reads counts with the .sql that names it.
                now = self._file.total_size if self._exhausted else min(self._reader_bytes, self._file.size)
                size, self._taken = now - self._taken, now
                if chunk in self._done:
                    rows, _ = self._done[chunk]
                    self._counters.add(self.table, rows, size)
                    continue
                statements = [*self._prefix, *batch]
                return SqlTask(
                    self.table,
                    size,
                    chunk,
                    self._session,
                    functools.partial(list, statements),
                    self._file.rows_file,
                    self._file.path.name,
                )

    def _account_rest(self) -> None:
        rest, self._taken = self._file.total_size - self._taken, self._file.total_size
        if rest > 0:
            self._counters.add(self.table, 0, rest, chunks=0)

    def _next_batch(self) -> list[Statement] | None:
        if self._statements is None:
            self._statements = self._read()
        batch: list[Statement] = []
        batch_bytes = 0
        for statement in self._statements:
            if statement.kind is not Kind.INSERT and classify(statement.text).action is Action.SESSION:
                self._prefix.append(statement)  # later chunks need it too
                if batch:
                    batch.append(statement)
                continue
            batch.append(statement)
            batch_bytes += len(statement.text)
            if batch_bytes >= self._chunk_size:
                return batch
        self._exhausted = True
        return batch or None

    def _read(self) -> Iterator[Statement]:
        splitter = ScriptSplitter()
        with open_dump(self._file.path) as reader:
            for block in reader.chunks(READ_BLOCK):
                self._reader_bytes = reader.compressed_bytes_read
                yield from splitter.feed(block)
            self._reader_bytes = reader.compressed_bytes_read
        yield from splitter.finish()
