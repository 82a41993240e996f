"""Restore a mysqldump file by piping it into the real `mysql` (or `mariadb`) command-line client.

We feed the client ourselves instead of `mysql < dump.sql` so that one pass over the file also gives
progress (bytes and rows), the expected row count of every table, and a clean way to cancel.

Exceptions (besides the `DumpError`s of reading the dump, see dump_stream):

    MysqlClientError          the client failed; the message says why and what to do
    ├── ClientConnectError    it could not connect or log in: the saved target is wrong
    └── SqlError              the server rejected a statement of the dump (line number included)
    RestoreCancelled          should_stop() asked us to stop; not a failure of the dump
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import re
import select
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from worker.runners.dump_stream import DumpReader, RowCounter, TableKey, open_dump

PROGRESS_INTERVAL_SECONDS = 0.5
# How often a blocked write (the server busy on one long statement) wakes up to check should_stop().
STOP_CHECK_SECONDS = 0.25
# A larger pipe lets the client read ahead while we decompress and count the next chunk.
PIPE_SIZE = 1 << 20
STDERR_LINES_KEPT = 50

# Errors the client reports before it runs any statement: the target's address or credentials are wrong.
_CONNECT_ERROR_CODES = frozenset({1044, 1045, 1049, 1129, 1130, 1698, 2002, 2003, 2005, 2026, 2059})
# The connection died mid-restore: not a bad statement, so say something more useful than "rejected".
_CONNECTION_LOST_CODES = frozenset({2006, 2013})
_CLIENT_ERROR = re.compile(r"ERROR (?P<code>\d+)(?: \((?P<state>\w+)\))?(?: at line (?P<line>\d+))?[^:]*: (?P<text>.*)")


class MysqlClientError(Exception):
    """The mysql client failed; `str(error)` says what happened and what to do."""


class ClientConnectError(MysqlClientError):
    """The client could not connect or log in."""


class SqlError(MysqlClientError):
    """The server rejected a statement of the dump."""

    def __init__(self, message: str, *, line: int | None, client_error: str) -> None:
        super().__init__(message)
        self.line = line  # line number in the dump file (our own prelude is not counted)
        self.client_error = client_error  # e.g. "ERROR 1064 (42000) at line 12: You have an error ..."


class RestoreCancelled(Exception):
    """The restore was stopped because should_stop() returned True; the client was killed."""


@dataclass
class RestoreProgress:
    bytes_done: int  # bytes of the dump file read so far (compressed size for .gz/.zst)
    bytes_total: int
    rows_done: int  # rows sent to the client so far


@dataclass
class RestoreOutcome:
    expected_rows: dict[TableKey, int]
    databases: list[str]
    has_use_statements: bool


def restore_with_mysql_client(
    dump: Path,
    client_args: list[str],
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[RestoreProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
    database: str | None = None,
    mysql_binary: str | None = None,
) -> RestoreOutcome:
    """Stream `dump` (plain, .gz or .zst) into the mysql client and return what the dump should contain.

    `client_args` are the connection options. They must start with `--defaults-file=<0600 file>` (the
    way credentials travel) or `--no-defaults`; otherwise `--no-defaults` is put first, so option files
    of the worker's machine (/etc/mysql, ~/.my.cnf) never change what we connect to.

    `database`: the database to restore into when the dump has no `USE` statements; it is created if
    missing. A dump made with --databases or --all-databases says where its tables go and wins.

    All callbacks run on the calling thread: `on_progress` at most every 0.5 s and once at the end,
    `on_log` with each line the client writes to stderr, `should_stop` between chunks and every
    0.25 s while the server is busy.
    """
    args = [mysql_binary or _find_mysql_binary(), *_with_defaults_option(client_args), "--batch"]
    prelude = _prelude(database)
    try:
        process = popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except FileNotFoundError as error:
        raise MysqlClientError(_missing_client_message(args[0])) from error
    session = _ClientSession(process, on_log, should_stop)
    try:
        counter = RowCounter(default_database=database)
        with open_dump(dump) as reader:
            _send(session, reader, counter, prelude.encode(), on_progress)
        session.finish_input()
        return_code = session.wait()
    except BaseException:
        session.kill()
        raise
    finally:
        session.close()
    if return_code != 0:
        raise _error_from_stderr(session.stderr_tail(), return_code, prelude_lines=prelude.count("\n"))
    return RestoreOutcome(counter.expected_rows, counter.databases, counter.has_use_statements)


def _send(
    session: _ClientSession,
    reader: DumpReader,
    counter: RowCounter,
    prelude: bytes,
    on_progress: Callable[[RestoreProgress], None],
) -> None:
    if prelude and not session.write(prelude):
        return
    next_progress = time.monotonic() + PROGRESS_INTERVAL_SECONDS
    for chunk in reader.chunks():
        counter.feed(chunk)
        if not session.write(chunk):
            return  # the client exited early; its stderr says why
        if time.monotonic() >= next_progress:
            on_progress(RestoreProgress(reader.compressed_bytes_read, reader.total_bytes, counter.rows_seen))
            next_progress = time.monotonic() + PROGRESS_INTERVAL_SECONDS
    counter.finish()
    on_progress(RestoreProgress(reader.compressed_bytes_read, reader.total_bytes, counter.rows_seen))


class _ClientSession:
    """The running client: non-blocking writes to its stdin, a thread collecting its stderr."""

    def __init__(
        self, process: subprocess.Popen[bytes], on_log: Callable[[str], None], should_stop: Callable[[], bool]
    ) -> None:
        assert process.stdin is not None and process.stderr is not None
        self._process = process
        self._stdin = process.stdin
        self._on_log = on_log
        self._should_stop = should_stop
        self._log_lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._tail: deque[str] = deque(maxlen=STDERR_LINES_KEPT)
        self._stdin_fd = self._stdin.fileno()
        # Non-blocking so a write stuck behind a slow statement can still notice should_stop().
        os.set_blocking(self._stdin_fd, False)
        with contextlib.suppress(OSError):  # Linux only; the default 64 KiB pipe still works
            fcntl.fcntl(self._stdin_fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        self._stderr_thread = threading.Thread(
            target=_collect_lines, args=(process.stderr, self._log_lines), name="mysql-stderr", daemon=True
        )
        self._stderr_thread.start()

    def write(self, data: bytes) -> bool:
        """Write all of `data`; False if the client has exited (broken pipe)."""
        view = memoryview(data)
        while view:
            self._check_stop()
            try:
                written = os.write(self._stdin_fd, view)
            except BlockingIOError:
                select.select([], [self._stdin_fd], [], STOP_CHECK_SECONDS)
                continue
            except BrokenPipeError:
                return False
            view = view[written:]
        self._pass_log_lines()
        return True

    def finish_input(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self._stdin.close()

    def wait(self) -> int:
        """Wait for the client to finish its last statements, still honouring should_stop()."""
        while True:
            self._check_stop()
            try:
                return_code = self._process.wait(timeout=STOP_CHECK_SECONDS)
            except subprocess.TimeoutExpired:
                continue
            self._stderr_thread.join()
            self._pass_log_lines()
            return return_code

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self._stdin.close()
        self._stderr_thread.join()
        assert self._process.stderr is not None
        self._process.stderr.close()
        self._pass_log_lines()

    def stderr_tail(self) -> list[str]:
        return list(self._tail)

    def _check_stop(self) -> None:
        self._pass_log_lines()
        if self._should_stop():
            raise RestoreCancelled("the restore was cancelled; the mysql client was stopped")

    def _pass_log_lines(self) -> None:
        while True:
            try:
                line = self._log_lines.get_nowait()
            except queue.Empty:
                return
            self._tail.append(line)
            self._on_log(line)


def _collect_lines(stream: IO[bytes], lines: queue.SimpleQueue[str]) -> None:
    for raw in stream:
        lines.put(raw.decode("utf-8", errors="replace").rstrip("\r\n"))


def _find_mysql_binary() -> str:
    binary = shutil.which("mariadb") or shutil.which("mysql")
    if binary is None:
        raise MysqlClientError(_missing_client_message("mariadb or mysql"))
    return binary


def _missing_client_message(binary: str) -> str:
    return (
        f"the {binary} command-line client is not installed on this worker; "
        "install the mariadb-client (or mysql-client) package"
    )


def _with_defaults_option(client_args: list[str]) -> list[str]:
    first = client_args[0] if client_args else ""
    if first == "--no-defaults" or first.startswith("--defaults-file="):
        return list(client_args)
    if first.startswith("--defaults"):
        # --defaults-extra-file and friends still read /etc/mysql; only an explicit file is predictable.
        raise ValueError(f"client_args must start with --no-defaults or --defaults-file=, not {first!r}")
    return ["--no-defaults", *client_args]


def _prelude(database: str | None) -> str:
    if database is None:
        return ""
    quoted = "`" + database.replace("`", "``") + "`"
    # One statement per line: `use` is a client command, and line numbers are shifted back exactly.
    return f"CREATE DATABASE IF NOT EXISTS {quoted};\nUSE {quoted};\n"


def _error_from_stderr(stderr_lines: list[str], return_code: int, prelude_lines: int) -> MysqlClientError:
    for line in stderr_lines:
        match = _CLIENT_ERROR.search(line)
        if match:
            return _classify_error(match, prelude_lines)
    if return_code < 0:
        return MysqlClientError(
            f"the mysql client was killed by signal {-return_code} before the restore finished; "
            "check the worker's memory and logs, then run the restore again"
        )
    tail = " | ".join(stderr_lines[-5:]) or "no error output"
    return MysqlClientError(f"the mysql client exited with code {return_code} ({tail}); see the job log")


def _classify_error(match: re.Match[str], prelude_lines: int) -> MysqlClientError:
    code = int(match["code"])
    client_error = match.group(0)
    if match["line"] is None and code in _CONNECT_ERROR_CODES:
        return ClientConnectError(
            f"could not connect to the target server: {client_error}; "
            "check the saved target's host, port, user and password"
        )
    line = int(match["line"]) - prelude_lines if match["line"] else None
    if line is not None and line <= 0:
        return SqlError(
            f"the server refused to create or use the restore database: {client_error}; "
            "check that the saved target's user may create databases",
            line=None,
            client_error=client_error,
        )
    where = f"at line {line} of the dump" if line is not None else "in the dump"
    if code in _CONNECTION_LOST_CODES:
        message = (
            f"the server closed the connection {where}: {client_error}; it crashed, was restarted, or the "
            "statement is larger than max_allowed_packet; check the server's error log"
        )
    else:
        message = (
            f"the server rejected the statement {where}: {client_error}; "
            "the dump is damaged or was made for another server version"
        )
    return SqlError(message, line=line, client_error=client_error)
