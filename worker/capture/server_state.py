"""What the server says it is doing, sampled on a connection of its own while the job runs.

Counter tracks (each a reading of SHOW GLOBAL STATUS; rates are over the interval since the reading before):
    server.rows_inserted        rows/s   Innodb_rows_inserted (MySQL), else Handler_write (MariaDB has no
                                         Innodb_rows_inserted; Handler_write counts rows written to any
                                         table handler, temporary tables of queries aside)
    server.dirty_pages          pages    Innodb_buffer_pool_pages_dirty
    server.checkpoint_age       MB       Innodb_checkpoint_age (MariaDB), else LSN - last checkpoint LSN from
                                         status or from SHOW ENGINE INNODB STATUS
    server.bp_reads             reads/s  Innodb_buffer_pool_reads: pages that had to come from disk
    server.bp_read_requests     reads/s  Innodb_buffer_pool_read_requests: logical page reads
    server.redo_written         MB/s     Innodb_os_log_written
    server.history_list_length  undo logs Innodb_history_list_length, else SHOW ENGINE INNODB STATUS
    server.threads_running      threads  Threads_running

"state" spans: each connection's SHOW PROCESSLIST state ("Update", "Sending data", "Waiting for table
metadata lock"; the command, such as "Sleep", when the state is empty) on the lane of the OS thread that
serves it. The processlist id maps to that thread through performance_schema.threads (THREAD_OS_ID); with
performance_schema off, MariaDB's information_schema.PROCESSLIST.TID gives the same; a server with
neither gets counters only. An observation holds from its round until the next one.
Thread names (roles) come from worker.capture.lanes.read_server_threads, shared with the lane naming.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import pymysql

from app.traces.records import CounterSample, Span
from worker.capture.cpu_sampler import MAX_SPAN_US, SpanMerger
from worker.capture.lanes import read_server_threads

if TYPE_CHECKING:  # the runtime class is not generic; only its stubs are
    Connection: TypeAlias = pymysql.connections.Connection[Any]
else:
    Connection = pymysql.connections.Connection
ThreadMapping = Literal["performance_schema", "processlist_tid", "none"]


@dataclass(frozen=True, slots=True)
class ServerCounter:
    """A counter track and the status variables it comes from (the first one the server has wins)."""

    track: str
    unit: str
    variables: tuple[str, ...]
    rate: bool  # a per-second rate of a growing total, else the value as read
    scale: float = 1.0


_MB = 1e-6
SERVER_COUNTERS = (
    ServerCounter("server.rows_inserted", "rows/s", ("Innodb_rows_inserted", "Handler_write"), rate=True),
    ServerCounter("server.dirty_pages", "pages", ("Innodb_buffer_pool_pages_dirty",), rate=False),
    ServerCounter("server.checkpoint_age", "MB", ("Innodb_checkpoint_age",), rate=False, scale=_MB),
    ServerCounter("server.bp_reads", "reads/s", ("Innodb_buffer_pool_reads",), rate=True),
    ServerCounter("server.bp_read_requests", "reads/s", ("Innodb_buffer_pool_read_requests",), rate=True),
    ServerCounter("server.redo_written", "MB/s", ("Innodb_os_log_written",), rate=True, scale=_MB),
    ServerCounter("server.history_list_length", "undo logs", ("Innodb_history_list_length",), rate=False),
    ServerCounter("server.threads_running", "threads", ("Threads_running",), rate=False),
)
_LSN_CURRENT, _LSN_CHECKPOINT = "Innodb_lsn_current", "Innodb_lsn_last_checkpoint"
STATUS_VARIABLES = tuple(
    sorted({name for counter in SERVER_COUNTERS for name in counter.variables} | {_LSN_CURRENT, _LSN_CHECKPOINT})
)
# Values SHOW ENGINE INNODB STATUS is asked for when the status variables lack them (MySQL).
_FROM_INNODB_STATUS = ("Innodb_checkpoint_age", "Innodb_history_list_length")


# --- pure parts -------------------------------------------------------------------------------------


def parse_status_rows(rows: list[tuple[Any, ...]]) -> dict[str, int]:
    """(name, value) rows of SHOW STATUS, numeric values only."""
    values: dict[str, int] = {}
    for name, value in rows:
        try:
            values[str(name)] = int(value)
        except (TypeError, ValueError):
            continue
    return values


def complete_status(status: Mapping[str, int], innodb_status: str | None) -> dict[str, int]:
    """Fill in checkpoint age and history list length the server does not report as status variables."""
    completed = dict(status)
    if "Innodb_checkpoint_age" not in completed and _LSN_CURRENT in completed and _LSN_CHECKPOINT in completed:
        completed["Innodb_checkpoint_age"] = completed[_LSN_CURRENT] - completed[_LSN_CHECKPOINT]
    if innodb_status is not None:
        for name, value in parse_innodb_status(innodb_status).items():
            completed.setdefault(name, value)
    return completed


_LOG_SEQUENCE = re.compile(r"^Log sequence number\s+(\d+)", re.MULTILINE)
_LAST_CHECKPOINT = re.compile(r"^Last checkpoint at\s+(\d+)", re.MULTILINE)
_HISTORY_LENGTH = re.compile(r"^History list length\s+(\d+)", re.MULTILINE)


def parse_innodb_status(text: str) -> dict[str, int]:
    """Checkpoint age (LSN minus last checkpoint) and history list length from SHOW ENGINE INNODB STATUS."""
    values: dict[str, int] = {}
    lsn, checkpoint = _LOG_SEQUENCE.search(text), _LAST_CHECKPOINT.search(text)
    if lsn and checkpoint:
        values["Innodb_checkpoint_age"] = int(lsn[1]) - int(checkpoint[1])
    if history := _HISTORY_LENGTH.search(text):
        values["Innodb_history_list_length"] = int(history[1])
    return values


def counter_samples(
    previous: tuple[int, Mapping[str, int]] | None, current: tuple[int, Mapping[str, int]]
) -> list[CounterSample]:
    """Counter samples at the current reading's time; rates need a previous reading, gauges do not."""
    t_us, values = current
    samples: list[CounterSample] = []
    for counter in SERVER_COUNTERS:
        name = next((name for name in counter.variables if name in values), None)
        if name is None:
            continue
        if not counter.rate:
            samples.append(CounterSample(counter.track, t_us, round(values[name] * counter.scale, 3), counter.unit))
            continue
        if previous is None or name not in previous[1] or t_us <= previous[0]:
            continue
        delta = values[name] - previous[1][name]
        if delta < 0:
            continue  # the server restarted and its totals began again
        rate = delta * counter.scale / ((t_us - previous[0]) / 1e6)
        samples.append(CounterSample(counter.track, t_us, round(rate, 3), counter.unit))
    return samples


def state_label(command: str | None, state: str | None) -> str:
    """What a DBA reads on the lane: the state when the server gives one, else the command ("Sleep")."""
    if state and state.strip():
        return state.strip()
    if command and command.strip():
        return command.strip()
    return "unknown"


@dataclass(frozen=True, slots=True)
class ConnectionState:
    connection_id: int
    tid: int
    label: str


class StateSpans:
    """Turns rounds of connection states into merged "state" spans: an observation lasts until the next round."""

    def __init__(self, max_span_us: int = MAX_SPAN_US) -> None:
        self._merger = SpanMerger("state", max_span_us)
        self._pending: dict[int, str] = {}
        self._pending_us = 0

    def update(self, t_us: int, states: list[ConnectionState]) -> list[Span]:
        finished: list[Span] = []
        current = {state.tid: state.label for state in states}
        for tid, label in self._pending.items():
            finished += self._merger.extend(tid, self._pending_us, t_us, label)
            if tid not in current:
                finished += self._merger.close(tid)
        self._pending, self._pending_us = current, t_us
        return finished

    def finish(self, t_us: int) -> list[Span]:
        """The last observations last until `t_us`, the end of sampling."""
        finished: list[Span] = []
        if t_us > self._pending_us:
            for tid, label in self._pending.items():
                finished += self._merger.extend(tid, self._pending_us, t_us, label)
        self._pending = {}
        return finished + self._merger.close_all()

    def forget_round(self) -> list[Span]:
        """A round was lost (connection error): what was pending cannot be extended honestly, close it."""
        self._pending = {}
        return self._merger.close_all()


# --- talking to the server --------------------------------------------------------------------------


_PROCESSLIST_QUERIES: dict[ThreadMapping, str] = {
    "performance_schema": (
        "SELECT p.ID, p.COMMAND, p.STATE, t.THREAD_OS_ID, t.NAME FROM information_schema.PROCESSLIST p"
        " JOIN performance_schema.threads t ON t.PROCESSLIST_ID = p.ID"
        " WHERE p.ID <> CONNECTION_ID() AND t.THREAD_OS_ID IS NOT NULL"
    ),
    "processlist_tid": (
        "SELECT ID, COMMAND, STATE, TID, NULL FROM information_schema.PROCESSLIST"
        " WHERE ID <> CONNECTION_ID() AND TID IS NOT NULL"
    ),
}


class ServerStateSampler:
    """One round = SHOW GLOBAL STATUS and the processlist, on a connection it opens (and reopens) itself."""

    def __init__(self, connect: Callable[[], Connection], max_span_us: int = MAX_SPAN_US) -> None:
        self._connect = connect
        self._connection: Connection | None = None
        self._previous: tuple[int, dict[str, int]] | None = None
        self._states = StateSpans(max_span_us)
        self._use_innodb_status = False
        self.performance_schema: bool | None = None
        self.thread_mapping: ThreadMapping | None = None
        # os tid -> (performance_schema name, processlist id) of every server thread seen.
        self.server_threads: dict[int, tuple[str, int | None]] = {}
        self.last_status: dict[str, int] = {}

    def sample(self, t_us: int) -> tuple[list[CounterSample], list[Span]]:
        """Read the server once. A database error closes the connection and propagates; the next call reconnects."""
        try:
            connection = self._connected()
            counters = self._read_counters(connection, t_us)
            spans = self._states.update(t_us, self._read_states(connection))
        except BaseException:
            self.close()
            raise
        return counters, spans

    def lose_round(self) -> list[Span]:
        """Called after a failed round: pending states are closed rather than stretched over the gap."""
        self._previous = None
        return self._states.forget_round()

    def finish(self, t_us: int) -> list[Span]:
        return self._states.finish(t_us)

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # Already gone when the server stopped: there is nothing to close cleanly.
            with contextlib.suppress(pymysql.MySQLError, OSError):
                connection.close()

    def _connected(self) -> Connection:
        if self._connection is None:
            connection = self._connect()
            self._detect(connection)
            self._connection = connection
        return self._connection

    def _detect(self, connection: Connection) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@performance_schema")
            row = cursor.fetchone()
            self.performance_schema = bool(row and int(row[0]))
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.COLUMNS"
                " WHERE TABLE_SCHEMA = 'information_schema' AND TABLE_NAME = 'PROCESSLIST' AND COLUMN_NAME = 'TID'"
            )
            row = cursor.fetchone()
            has_tid = bool(row and int(row[0]))
        if self.performance_schema:
            self.thread_mapping = "performance_schema"
            threads, _client_pids = read_server_threads(connection)
            self.server_threads.update({tid: (thread.name, thread.processlist_id) for tid, thread in threads.items()})
        else:
            self.thread_mapping = "processlist_tid" if has_tid else "none"

    def _read_counters(self, connection: Connection, t_us: int) -> list[CounterSample]:
        placeholders = ", ".join(["%s"] * len(STATUS_VARIABLES))
        with connection.cursor() as cursor:
            cursor.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({placeholders})", STATUS_VARIABLES)
            status = parse_status_rows(list(cursor.fetchall()))
            if self._previous is None:
                self._use_innodb_status = any(name not in status for name in _FROM_INNODB_STATUS)
            innodb_status = None
            if self._use_innodb_status:
                cursor.execute("SHOW ENGINE INNODB STATUS")
                row = cursor.fetchone()
                innodb_status = str(row[2]) if row and len(row) > 2 else None
        values = complete_status(status, innodb_status)
        samples = counter_samples(self._previous, (t_us, values))
        self._previous = (t_us, values)
        self.last_status = values
        return samples

    def _read_states(self, connection: Connection) -> list[ConnectionState]:
        if self.thread_mapping is None or self.thread_mapping == "none":
            return []
        with connection.cursor() as cursor:
            cursor.execute(_PROCESSLIST_QUERIES[self.thread_mapping])
            rows = cursor.fetchall()
        states: list[ConnectionState] = []
        for connection_id, command, state, tid, name in rows:
            states.append(ConnectionState(int(connection_id), int(tid), state_label(command, state)))
            if name is not None:
                self.server_threads[int(tid)] = (str(name), int(connection_id))
        return states
