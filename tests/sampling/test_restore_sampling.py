"""Sampling real restores: `mysql` clients piping mysqldump files into a sandbox MariaDB, into the real trace store.

The oracle for "which thread is the loading connection" is performance_schema itself, polled by the test
while the load runs: the thread whose statement is an INSERT, and its THREAD_OS_ID.
"""

import gc
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]
import pytest

from app.sandboxes.options import ServerOptions
from app.traces.store import TraceWriter, iter_parts
from worker.capture.sampling import SamplingReport, sample_job
from worker.process_group import ProcessGroup
from worker.runners.mysql_client import restore_with_mysql_client
from worker.sandbox.binary import ServerBinary, detect_server_binary, find_tool
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

DATABASE = "loaded"
ROWS = {"t1": 400_000, "t2": 250_000}
# sysbench-like rows (~190 bytes): the restore is one server thread parsing and inserting them.
_TABLE = """CREATE TABLE {name} (
    id INT UNSIGNED NOT NULL PRIMARY KEY, k INT UNSIGNED NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL,
    KEY k_1 (k)) ENGINE=InnoDB"""
_FILL = """INSERT INTO {name} SELECT seq, (seq * 2654435761) % {rows} + 1,
    LEFT(CONCAT_WS('-', seq * 7, seq * 11, seq * 13, seq * 17, seq * 19, seq * 23, seq * 29, seq * 31, seq * 37,
                   seq * 41, REPEAT('x', 40)), 120),
    LEFT(CONCAT_WS('-', seq * 43, seq * 47, seq * 53, REPEAT('y', 30)), 60)
    FROM seq_1_to_{rows}"""


@pytest.fixture(scope="module")
def binary() -> ServerBinary:
    return detect_server_binary()


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory, binary: ServerBinary) -> dict[str, Path]:
    """One mysqldump file per table (no CREATE DATABASE or USE: the restore chooses the database)."""
    folder = tmp_path_factory.mktemp("dumps")
    with Sandbox(folder / "work", "source", ServerOptions(), binary, ProcessGroup(), lambda _: None) as source:
        source.start()
        with source.connect() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {DATABASE}")
            cursor.execute(f"USE {DATABASE}")
            for name, rows in ROWS.items():
                cursor.execute(_TABLE.format(name=name))
                cursor.execute(_FILL.format(name=name, rows=rows))
        paths = {}
        for name in ROWS:
            paths[name] = folder / f"{name}.sql"
            with paths[name].open("wb") as out:
                subprocess.run(
                    # Without LOCK TABLES: a client holding its table locked all through its INSERTs would
                    # make the other client's CREATE DATABASE IF NOT EXISTS wait, and the loads run one by one.
                    [
                        find_tool(("mysqldump", "mariadb-dump")),
                        "--no-defaults",
                        "--skip-add-locks",
                        *source.client_args(),
                        DATABASE,
                        name,
                    ],
                    stdout=out,
                    check=True,
                )
    return paths


@pytest.fixture
def target(tmp_path: Path, binary: ServerBinary, request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    performance_schema = getattr(request, "param", True)
    options = ServerOptions(performance_schema=performance_schema)
    with Sandbox(tmp_path / "work", "target", options, binary, ProcessGroup(), lambda _: None) as sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {DATABASE}")
        yield sandbox


@dataclass
class LoadingConnections:
    """Polls performance_schema for the threads running an INSERT: {THREAD_OS_ID: PROCESSLIST_ID}."""

    sandbox: Sandbox
    seen: dict[int, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> "LoadingConnections":
        self._thread = threading.Thread(target=self._poll)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        with self.sandbox.connect() as connection, connection.cursor() as cursor:
            while not self._stop.wait(0.2):
                cursor.execute(
                    "SELECT THREAD_OS_ID, PROCESSLIST_ID FROM performance_schema.threads"
                    " WHERE PROCESSLIST_INFO LIKE 'INSERT INTO%'"
                )
                self.seen.update({int(tid): int(connection_id) for tid, connection_id in cursor.fetchall()})


@dataclass
class Restore:
    report: SamplingReport
    spans: list[dict[str, Any]]
    counters: list[dict[str, Any]]
    loading: dict[int, int]  # THREAD_OS_ID -> PROCESSLIST_ID of the connections that ran the INSERTs
    started_us: int
    load_ends_us: list[int]  # when each client finished

    @property
    def ended_us(self) -> int:
        return max(self.load_ends_us)

    def spans_of(self, tid: int, track: str) -> list[dict[str, Any]]:
        return [span for span in self.spans if span["tid"] == tid and span["track"] == track]

    def share(self, tid: int, labels: set[str], until_us: int | None = None) -> float:
        """Share of the load (from its start until `until_us`, by default the end) lane `tid` spent in `labels`."""
        t0, t1 = self.started_us, until_us or self.ended_us
        inside = sum(_overlap(span, t0, t1) for span in self.spans_of(tid, "cpu"))
        wanted = sum(_overlap(span, t0, t1) for span in self.spans_of(tid, "cpu") if span["label"] in labels)
        return wanted / inside if inside else 0.0

    def values(self, track: str) -> list[float]:
        return [row["value"] for row in sorted(self.counters, key=lambda r: r["t_us"]) if row["track"] == track]


def _overlap(span: dict[str, Any], t0: int, t1: int) -> int:
    return max(0, min(int(span["start_us"]) + int(span["duration_us"]), t1) - max(int(span["start_us"]), t0))


def _read_records(directory: Path, kind: str) -> list[dict[str, Any]]:
    """Spans or counters as the store kept them: one file once the trace is closed, else its parts."""
    compacted = directory / f"{kind}.parquet"
    parts = [compacted] if compacted.exists() else list(iter_parts(directory, kind))
    rows: list[dict[str, Any]] = []
    for part in parts:
        rows += pq.read_table(part).to_pylist()
    return rows


def _restore(sandbox: Sandbox, dumps: list[Path], trace: Path) -> Restore:
    """Load `dumps` at the same time, one mysql client each, sampled into a TraceWriter."""
    clients: list[subprocess.Popen[bytes]] = []
    processes = ProcessGroup()

    def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        client = processes.popen(args, **kwargs)  # setpriv execs the client: its pid is the client's
        clients.append(client)
        return client

    def watched() -> list[int]:
        return [pid for pid in [sandbox.pid, *(c.pid for c in clients if c.poll() is None)] if pid is not None]

    load_ends_us: list[int] = []

    def load(dump: Path) -> None:
        restore_with_mysql_client(
            dump,
            ["--no-defaults", *sandbox.client_args()],
            popen,
            on_progress=lambda _: None,
            on_log=lambda _: None,
            should_stop=lambda: False,
            database=DATABASE,
        )
        load_ends_us.append(time.time_ns() // 1000)

    writer = TraceWriter(trace)
    with LoadingConnections(sandbox) as loading, sample_job(writer, pids=watched, connect=sandbox.connect) as report:
        started_us = time.time_ns() // 1000
        loaders = [threading.Thread(target=load, args=(dump,)) for dump in dumps]
        for loader in loaders:
            loader.start()
        for loader in loaders:
            loader.join()
    writer.close()
    spans, counters = _read_records(trace, "spans"), _read_records(trace, "counters")
    return Restore(report, spans, counters, loading.seen, started_us, load_ends_us)


def _describe(restore: Restore) -> str:
    lanes = ", ".join(
        f"{busy.tid} {busy.comm} {busy.busy_pct:.0f}% (runnable {busy.runnable_pct:.0f}%)"
        for busy in restore.report.threads[:6]
    )
    return f"busiest lanes: {lanes}; loading connections: {restore.loading}; errors: {restore.report.errors}"


def test_a_single_stream_restore_keeps_one_server_thread_busy(
    target: Sandbox, dumps: dict[str, Path], tmp_path: Path
) -> None:
    restore = _restore(target, [dumps["t1"]], tmp_path / "trace")
    report = restore.report
    assert len(restore.loading) == 1, _describe(restore)
    [(tid, connection_id)] = restore.loading.items()

    # The loading connection's lane carries its OS thread id, as performance_schema names it.
    assert report.server_threads[tid] == ("thread/sql/one_connection", connection_id)
    assert report.thread_mapping == "performance_schema" and report.performance_schema is True
    busy = report.thread(tid)
    assert busy is not None and busy.pid == target.pid, _describe(restore)

    # That one thread is on a CPU most of the time...
    assert restore.share(tid, {"running", "runnable"}) > 0.6, _describe(restore)
    assert busy.busy_pct + busy.runnable_pct > 60, _describe(restore)
    # ...and no other thread of the server or of the client is: the second core is left for others.
    others = [thread for thread in report.threads if thread.tid != tid]
    assert all(thread.busy_pct < 40 for thread in others), _describe(restore)
    restore_cores = sum(thread.cpu_s for thread in report.threads) / report.wall_s
    assert restore_cores < 1.5, _describe(restore)
    client_threads = [thread for thread in report.threads if thread.comm in ("mysql", "mariadb")]
    assert client_threads, "the mysql client's threads were not sampled"

    # What the server said while loading.
    labels = {span["label"] for span in restore.spans_of(tid, "state")}
    assert labels - {"Sleep"}, f"no processlist state of the loading connection on its lane: {labels}"
    rows_inserted = restore.values("server.rows_inserted")
    assert max(rows_inserted) > 10_000
    assert {row["track"]: row["unit"] for row in restore.counters if row["track"].startswith("server.")} == {
        "server.rows_inserted": "rows/s",
        "server.dirty_pages": "pages",
        "server.checkpoint_age": "MB",
        "server.bp_reads": "reads/s",
        "server.bp_read_requests": "reads/s",
        "server.redo_written": "MB/s",
        "server.history_list_length": "undo logs",
        "server.threads_running": "threads",
    }
    assert max(restore.values("server.redo_written")) > 1
    assert max(restore.values("server.threads_running")) >= 1

    # The machine and the disk under the datadir.
    assert report.disk_device is not None
    assert max(restore.values("disk.write_mb_s")) > 0
    assert statistics.median(restore.values("cpu.busy_cores")) >= 0.9
    assert report.errors == [] and report.late_rounds < report.cpu_rounds * 0.1
    print(
        f"\nsingle stream: {_describe(restore)}; running {restore.share(tid, {'running'}):.0%} of the load; "
        f"restore used {restore_cores:.2f} cores; machine median {statistics.median(restore.values('cpu.busy_cores'))}"
        f" cores busy; states {sorted(labels)}; sampler CPU {report.sampler_cpu_pct:.2f}% of a core"
    )


def test_a_parallel_load_keeps_two_server_threads_busy(target: Sandbox, dumps: dict[str, Path], tmp_path: Path) -> None:
    restore = _restore(target, [dumps["t1"], dumps["t2"]], tmp_path / "trace")
    report = restore.report
    assert len(restore.loading) == 2, _describe(restore)
    # While both clients load (until the smaller table is done), both connections' lanes are on a CPU.
    both_loading_until = min(restore.load_ends_us)
    for tid, connection_id in restore.loading.items():
        assert report.server_threads[tid] == ("thread/sql/one_connection", connection_id)
        on_cpu = restore.share(tid, {"running", "runnable"}, until_us=both_loading_until)
        assert on_cpu > 0.5, f"lane {tid} on a CPU {on_cpu:.0%} of the time; {_timeline(restore)}"
        assert {span["label"] for span in restore.spans_of(tid, "state")} - {"Sleep"}
    both_on_cpu = _both_on_cpu_us(restore, list(restore.loading), restore.started_us, both_loading_until)
    assert both_on_cpu > 0.3 * (both_loading_until - restore.started_us), _describe(restore)
    assert max(restore.values("server.threads_running")) >= 2
    shares = {tid: f"{restore.share(tid, {'running'}, both_loading_until):.0%}" for tid in restore.loading}
    print(
        f"\nparallel: {_describe(restore)}; running while both load: {shares}; "
        f"both on a CPU at once {both_on_cpu / (both_loading_until - restore.started_us):.0%}"
    )


def _timeline(restore: Restore) -> str:
    """The loading lanes' states and CPU labels, relative to the start, for a failure message."""

    def row(span: dict[str, Any]) -> str:
        return f"{(span['start_us'] - restore.started_us) / 1e6:.2f}+{span['duration_us'] / 1e6:.2f} {span['label']}"

    def rows(tid: int, track: str) -> str:
        return ", ".join(map(row, sorted(restore.spans_of(tid, track), key=lambda span: span["start_us"])[:40]))

    loads = [f"{(end - restore.started_us) / 1e6:.2f}" for end in restore.load_ends_us]
    lanes = [f"lane {tid}: states [{rows(tid, 'state')}] cpu [{rows(tid, 'cpu')}]" for tid in restore.loading]
    return f"{_describe(restore)}; loads ended at {loads} s; " + "; ".join(lanes)


def _both_on_cpu_us(restore: Restore, tids: list[int], t0: int, t1: int) -> int:
    """Time in [t0, t1) when every lane in `tids` was running or runnable, on a 10 ms grid."""
    step, total = 10_000, 0
    on_cpu = [
        [
            (span["start_us"], span["start_us"] + span["duration_us"])
            for span in restore.spans_of(tid, "cpu")
            if span["label"] in ("running", "runnable")
        ]
        for tid in tids
    ]
    for t in range(t0, t1, step):
        if all(any(start <= t < end for start, end in spans) for spans in on_cpu):
            total += step
    return total


@pytest.mark.parametrize("target", [None], indirect=True, ids=["performance-schema-off"])
def test_without_performance_schema_states_still_reach_the_connection_lane(
    target: Sandbox, dumps: dict[str, Path], tmp_path: Path
) -> None:
    restore = _restore(target, [dumps["t2"]], tmp_path / "trace")
    report = restore.report
    assert report.performance_schema is False and report.thread_mapping == "processlist_tid"
    assert any("performance_schema is OFF" in note for note in report.notes)
    # No oracle from performance_schema here: the lane with the states is the one that was busy.
    state_tids = {span["tid"] for span in restore.spans if span["track"] == "state"}
    busiest = report.threads[0]
    assert busiest.pid == target.pid and busiest.tid in state_tids, _describe(restore)
    assert {span["label"] for span in restore.spans_of(busiest.tid, "state")} - {"Sleep"}
    assert report.server_threads == {}


# The stopped server's socket is gone: PyMySQL 1.1 leaves the socket of each failed connect for the garbage
# collector, which warns (ResourceWarning) wherever it runs next.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_server_going_away_is_recorded_not_raised(target: Sandbox, tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "trace")
    server_pid = target.pid
    assert server_pid is not None
    with sample_job(writer, pids=lambda: [server_pid], connect=target.connect, server_interval_s=0.1) as report:
        time.sleep(0.6)
        target.stop()
        time.sleep(1.0)
    writer.close()
    gc.collect()
    assert report.server_rounds >= 3
    assert [error.sampler for error in report.errors] == ["server"], report.errors
    assert report.errors[0].message.startswith("server state not read")
    spans = _read_records(tmp_path / "trace", "spans")
    ends = [span["start_us"] + span["duration_us"] for span in spans if span["track"] == "cpu"]
    assert ends and max(ends) < report.stopped_us - 500_000, "the server's lanes end when it exits"
