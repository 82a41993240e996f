"""Lanes named by role: which thread is the page cleaner, which one runs connection 8 for the mysql client.

Every thread of MariaDB has the comm name "mariadbd", so roles come from performance_schema.threads
(THREAD_OS_ID -> NAME, PROCESSLIST_ID) and, for connections, from session_connect_attrs (the client's
program name and pid). Threads performance_schema does not list (io_uring workers, tpool's completion
thread) and the processes the job launches are named from /proc/PID/task/TID/comm. The client's own
thread gets its connection id through the `_pid` connection attribute the client library sends.

`role_of` is pure (table-tested); LaneNamer does the reading and refreshes as threads come and go.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.traces.records import Lane, TraceSink

log = logging.getLogger("restorescope.capture")

REFRESH_INTERVAL_S = 1.0
BURST_S = 2.0
BURST_INTERVAL_S = 0.02
# The process names of the tracers that launch a job's tools: under strace a tool's pid carries strace's name
# until it execs, and a lane named then would keep that name if the tool exits before the next refresh.
TRACERS = frozenset({"strace"})

# performance_schema thread names (the part after "thread/") -> the role a DBA reads.
_SERVER_ROLES = {
    "sql/main": "main",
    "sql/signal_handler": "signal handler",
    "sql/manager": "manager",
    "sql/slave_deadlock_handler": "replica deadlock handler",
    "sql/slave_io": "replica io",
    "sql/slave_sql": "replica sql",
    "sql/event_scheduler": "event scheduler",
    "innodb/page_cleaner_thread": "page cleaner",
    "innodb/thread_pool_thread": "innodb worker",
    "innodb/io_read_thread": "io read",
    "innodb/io_write_thread": "io write",
    "innodb/io_log_thread": "log writer",
    "innodb/io_ibuf_thread": "change buffer io",
    "innodb/buf_dump_thread": "buffer pool dump",
    "innodb/srv_purge_thread": "purge",
    "innodb/srv_master_thread": "innodb master",
    "aria/checkpoint_background": "aria checkpoint",
    "mysys/statement_timer": "statement timer",
}
_CLIENT_PROGRAMS = {"mysql", "mariadb"}


@dataclass(frozen=True)
class ServerThread:
    """A row of performance_schema.threads, with the connection's program when it is a connection."""

    os_id: int
    name: str
    processlist_id: int | None
    program: str | None = None


def role_of(comm: str, process: str, thread: ServerThread | None = None, client_connection: int | None = None) -> str:
    """The role of a thread, from what performance_schema and /proc say about it.

    >>> role_of("mariadbd", "mariadbd", ServerThread(5, "thread/innodb/page_cleaner_thread", None))
    'page cleaner'
    """
    if thread is not None:
        short = thread.name.removeprefix("thread/")
        if short == "sql/one_connection" and thread.processlist_id is None:
            return "idle connection thread"  # in the thread cache, waiting for the next connection
        if short == "sql/one_connection" or (thread.processlist_id is not None and short.startswith("sql/")):
            program = f" ({thread.program})" if thread.program else ""
            return f"connection {thread.processlist_id}{program}"
        if short in _SERVER_ROLES:
            return _SERVER_ROLES[short]
        return short.rpartition("/")[2].removesuffix("_thread").replace("_", " ")
    if comm.startswith("iou-wrk-"):
        return "io_uring worker"
    if comm.startswith("iou-sqp-"):
        return "io_uring poller"
    if process in _CLIENT_PROGRAMS:
        suffix = f" (connection {client_connection})" if client_connection is not None else ""
        return f"mysql client{suffix}"
    if process in ("mariadbd", "mysqld"):
        return "server thread" if comm == process else comm
    return comm if comm == process else f"{process}: {comm}"


def read_server_threads(connection: Any) -> tuple[dict[int, ServerThread], dict[int, int]]:
    """({os thread id: ServerThread}, {client pid: connection id}) from performance_schema."""
    with connection.cursor() as cursor:
        cursor.execute(
            # The program a connection says it is (the mysql client sends program_name; libraries without
            # it, such as pymysql, only their _client_name).
            "SELECT t.THREAD_OS_ID, t.NAME, t.PROCESSLIST_ID, COALESCE(p.ATTR_VALUE, c.ATTR_VALUE) "
            "FROM performance_schema.threads t "
            "LEFT JOIN performance_schema.session_connect_attrs p "
            "ON p.PROCESSLIST_ID = t.PROCESSLIST_ID AND p.ATTR_NAME = 'program_name' "
            "LEFT JOIN performance_schema.session_connect_attrs c "
            "ON c.PROCESSLIST_ID = t.PROCESSLIST_ID AND c.ATTR_NAME = '_client_name' "
            "WHERE t.THREAD_OS_ID IS NOT NULL"
        )
        threads = {
            int(os_id): ServerThread(int(os_id), str(name), int(pid) if pid is not None else None, program)
            for os_id, name, pid, program in cursor.fetchall()
        }
        cursor.execute(
            "SELECT PROCESSLIST_ID, ATTR_VALUE FROM performance_schema.session_connect_attrs WHERE ATTR_NAME = '_pid'"
        )
        client_connections = {int(value): int(pid) for pid, value in cursor.fetchall() if str(value).isdigit()}
    return threads, client_connections


def _with_earlier_connections(lane: Lane, known: Lane | None) -> Lane:
    """A server thread serves one connection after another (the thread cache): its lane says all of them."""
    if known is None or not known.role.startswith("connection"):
        return lane
    if lane.role == "idle connection thread":
        return known  # between connections: it keeps the names of those it served
    if not lane.role.startswith("connection "):
        return lane
    new = lane.role.removeprefix("connection ")
    if new in known.role:
        return known if known.connection_id == lane.connection_id else replace(known, connection_id=lane.connection_id)
    return replace(lane, role=f"{known.role}, then {new}")


def _comm(pid: int, tid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    except OSError:
        return None


def _threads_of(pid: int) -> list[int]:
    try:
        return [int(entry.name) for entry in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return []


class LaneNamer:
    """Names the lanes of the watched processes, now and every second until stop()."""

    def __init__(
        self,
        sink: TraceSink,
        pids: Callable[[], list[int]],
        connect: Callable[[], Any] | None = None,
        interval_s: float = REFRESH_INTERVAL_S,
    ) -> None:
        self._sink = sink
        self._pids = pids
        self._connect = connect
        self._interval_s = interval_s
        self._named: dict[int, Lane] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._burst_until = 0.0
        self._thread: threading.Thread | None = None
        self._performance_schema_ok = connect is not None
        self._connection: Any = None

    @property
    def lanes(self) -> dict[int, Lane]:
        return dict(self._named)

    def start(self) -> LaneNamer:
        self.refresh()
        self._thread = threading.Thread(target=self._run, name="capture-lanes", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)
        self._performance_schema_ok = False  # the last look is at /proc only: the server may be gone
        with contextlib.suppress(Exception):
            self.refresh()
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()

    def use_server(self, connect: Callable[[], Any]) -> None:
        """Name server threads from performance_schema from now on: the server started after the namer."""
        self._connect = connect
        self._performance_schema_ok = True
        self._wake.set()

    def look_closely(self, seconds: float = BURST_S) -> None:
        """Refresh every BURST_INTERVAL_S for a while: a new client and its connection may live only briefly."""
        self._burst_until = time.monotonic() + seconds
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            bursting = time.monotonic() < self._burst_until
            self._wake.wait(BURST_INTERVAL_S if bursting else self._interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.refresh()
            except Exception:
                log.exception("naming lanes failed; trying again")

    def refresh(self) -> None:
        threads, client_connections = self._server_threads()
        for pid in self._pids():
            process = _comm(pid, pid)
            if process is None or process in TRACERS:
                continue  # a tracer's child between its fork and its exec: named once it is the tool
            for tid in _threads_of(pid):
                comm = _comm(pid, tid)
                if comm is None:
                    continue
                thread = threads.get(tid)
                connection_id = thread.processlist_id if thread else client_connections.get(pid)
                lane = Lane(
                    tid=tid,
                    role=role_of(comm, process, thread, client_connections.get(pid)),
                    name=thread.name if thread else comm,
                    process=process,
                    pid=pid,
                    connection_id=connection_id,
                )
                known = self._named.get(tid)
                if thread is None and known is not None and known.name.startswith("thread/"):
                    continue  # named by performance_schema before: /proc alone knows less, keep that name
                lane = _with_earlier_connections(lane, known)
                if known is not None and known.connection_id is not None and lane.connection_id is None:
                    continue  # a client that has disconnected and is exiting: it keeps its connection's name
                if known != lane:
                    self._named[tid] = lane
                    self._sink.set_lane(lane)

    def _server_threads(self) -> tuple[dict[int, ServerThread], dict[int, int]]:
        # One connection for the whole job, never reopened once lost: the server is then stopping, and a
        # connect to its dying socket would only fail (and pymysql leaks the socket of a refused connect).
        if not self._performance_schema_ok or self._connect is None:
            return {}, {}
        try:
            if self._connection is None:
                self._connection = self._connect()
            return read_server_threads(self._connection)
        except Exception as error:  # performance_schema off, server gone, no privilege: /proc names only
            log.info("lanes: no more names from performance_schema (%s); naming threads from /proc only", error)
            self._performance_schema_ok = False
            if self._connection is not None:
                with contextlib.suppress(Exception):
                    self._connection.close()
                self._connection = None
            return {}, {}
