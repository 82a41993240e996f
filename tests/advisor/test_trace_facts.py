"""The evidence read from a trace: a small trace written through the real store with known answers."""

from pathlib import Path

import pytest

from app.advisor import trace_facts
from app.traces.records import CounterSample, Lane, Span
from tests.traces.helpers import make_trace, op

S = 1_000_000  # one second in microseconds
T0 = 1_700_000_000 * S


def spans(tid: int, track: str, pieces: list[tuple[float, float, str]]) -> list[Span]:
    """Spans from (start second, end second, label), relative to T0."""
    return [Span(tid, T0 + int(a * S), int((b - a) * S), track, label) for a, b, label in pieces]  # type: ignore[arg-type]


LANES = [
    Lane(1, "connection 8 (restorescope-loader)", "thread/sql/one_connection", "mariadbd"),
    Lane(2, "connection 9 (restorescope-loader)", "thread/sql/one_connection", "mariadbd"),
    Lane(3, "connection 4 (restorescope-sampler)", "thread/sql/one_connection", "mariadbd"),
    Lane(4, "page cleaner", "thread/innodb/page_cleaner_thread", "mariadbd"),
    Lane(5, "mysql client (connection 8)", "mysql", "mysql"),
    Lane(6, "connection 10 (restorescope-loader)", "thread/sql/one_connection", "mariadbd"),
    Lane(7, "connection 5 (restorescope-lanes)", "thread/sql/one_connection", "mariadbd"),
]


@pytest.fixture
def trace(tmp_path: Path):  # type: ignore[no-untyped-def]
    cpu = [
        # Lane 1 runs the whole 10 s, but for 2 s waiting for a CPU and 1 s on the disk.
        *spans(1, "cpu", [(0, 7, "running"), (7, 9, "runnable"), (9, 10, "io_wait")]),
        # Lane 2 runs the first half only, then is blocked.
        *spans(2, "cpu", [(0, 5, "running"), (5, 10, "blocked")]),
        *spans(3, "cpu", [(0, 10, "running")]),
        *spans(4, "cpu", [(0, 1, "running"), (1, 10, "blocked")]),
        *spans(5, "cpu", [(0, 2, "running"), (2, 10, "blocked")]),
        # Lane 6 is a connection that only slept: restorescope's own, or the loader's idle coordinator.
        *spans(6, "cpu", [(0, 10, "blocked")]),
        *spans(7, "cpu", [(0, 1, "running"), (1, 10, "blocked")]),
    ]
    state = [
        *spans(1, "state", [(0, 6, "Update"), (6, 10, "altering table")]),
        *spans(2, "state", [(0, 5, "Update"), (5, 10, "Sleep")]),
        *spans(6, "state", [(0, 10, "Sleep")]),
    ]
    ops = [
        # Lane 1: 3 fsyncs of 0.5 s on the redo log, and 2 reads of a data file of 0.25 s.
        *(op(T0 + i * S, S // 2, tid=1, kind="fsync", path="/d/ib_logfile0") for i in range(3)),
        *(op(T0 + 5 * S + i * S, S // 4, tid=1, kind="read", path="/d/sb/t.ibd", offset=i * 16384) for i in range(2)),
        # The page cleaner writes 4 sequential pages and one elsewhere; and the doublewrite area.
        *(op(T0 + i * S, 1000, tid=4, kind="write", path="/d/sb/t.ibd", offset=i * 16384) for i in range(4)),
        op(T0 + 5 * S, 1000, tid=4, kind="write", path="/d/sb/t.ibd", offset=10 << 20),
        op(T0 + 6 * S, 1000, tid=4, kind="write", path="/d/ibdata1", offset=0, size=1 << 20),
    ]
    counters = [
        *(CounterSample("cpu.busy_cores", T0 + i * S, 1.5, "cores") for i in range(1, 11)),
        *(CounterSample("cpu.iowait", T0 + i * S, 2.0 if i <= 5 else 4.0, "%") for i in range(1, 11)),
        *(CounterSample("server.checkpoint_age", T0 + i * S, float(i), "MB") for i in range(0, 11)),
    ]
    return make_trace(tmp_path / "t", ops, spans=[*cpu, *state], counters=counters, lanes=LANES)


def test_lanes_are_grouped_and_their_time_split_by_cpu_state(trace) -> None:  # type: ignore[no-untyped-def]
    lanes = {lane.tid: lane for lane in trace_facts.lane_activity(trace, T0, T0 + 10 * S, buckets=10)}
    assert {tid: lane.group for tid, lane in lanes.items()} == {
        1: "loading",
        2: "loading",
        3: "background",  # the state sampler's connection
        4: "background",
        5: "tool",
        6: "background",  # a connection that only slept
        7: "background",  # the lane namer's connection, reading performance_schema
    }
    one = lanes[1]
    assert (one.running_s, one.runnable_s, one.io_wait_s, one.blocked_s) == (7.0, 2.0, 1.0, 0.0)
    assert one.running_series == (1.0,) * 7 + (0.0,) * 3
    assert lanes[2].running_series == (1.0,) * 5 + (0.0,) * 5
    assert one.states == {"Update": 6.0, "altering table": 4.0}
    assert one.state_series == ("Update",) * 6 + ("altering table",) * 4


def test_a_window_counts_only_the_time_inside_it(trace) -> None:  # type: ignore[no-untyped-def]
    lanes = {lane.tid: lane for lane in trace_facts.lane_activity(trace, T0 + 4 * S, T0 + 6 * S, buckets=2)}
    assert lanes[2].running_s == 1.0 and lanes[2].blocked_s == 1.0
    assert lanes[2].running_series == (1.0, 0.0)


def test_fsync_and_data_reads_are_added_to_the_loading_lanes(trace) -> None:  # type: ignore[no-untyped-def]
    lanes = trace_facts.lane_activity(trace, T0, T0 + 10 * S)
    with_io = {lane.tid: lane for lane in trace_facts.with_io(trace, lanes, T0, T0 + 10 * S)}
    assert with_io[1].fsync_s == 1.5
    assert (with_io[1].data_read_s, with_io[1].data_reads) == (0.5, 2)
    assert with_io[2].fsync_s == 0.0


def test_io_facts_of_the_window(trace) -> None:  # type: ignore[no-untyped-def]
    io = trace_facts.io_facts(trace, T0, T0 + 10 * S)
    assert (io.fsyncs, io.fsync_p50_us, io.fsync_total_s) == (3, S // 2, 1.5)
    assert io.data_writes == 5 and io.data_write_p50_bytes == 16384
    assert (
        io.data_sequential_pct == 60.0
    )  # of the data-file writes, 3 follow the one before (not the first, nor 10 MiB)
    assert io.bytes_written_by_file_kind == {"data": 5 * 16384, "system": 1 << 20}


def test_counters_over_the_window(trace) -> None:  # type: ignore[no-untyped-def]
    assert trace_facts.counter_mean(trace, "cpu.iowait", T0, T0 + 10 * S) == 3.0
    assert trace_facts.counter_mean(trace, "cpu.busy_cores", T0, T0 + 10 * S) == 1.5
    assert trace_facts.counter_mean(trace, "disk.write_mb_s", T0, T0 + 10 * S) is None
    series = trace_facts.counter_series(trace, "server.checkpoint_age", T0 + 2 * S, T0 + 4 * S)
    assert series is not None and series.values == (2.0, 3.0, 4.0)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/var/lib/mysql/ib_logfile0", "redo"),
        ("/var/lib/mysql/shop/orders.ibd", "data"),
        ("/var/lib/mysql/ibdata1", "system"),
        ("/var/lib/mysql/undo001", "system"),
        ("/var/lib/mysql/mysql-bin.000003", "binlog"),
        ("/var/lib/mysql/ibtmp1", "other"),
        ("socket:[1234]", "other"),
    ],
)
def test_file_kinds(path: str, kind: str) -> None:
    assert trace_facts.file_kind(path) == kind
