"""The trace writer: parts appear while it runs, memory stays bounded, close finalises and summarises."""

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from app.core.config import get_settings
from app.core.db import session_scope
from app.models.trace import Trace
from app.traces.operation import Malformed, Operation
from app.traces.reader import open_trace_data
from app.traces.records import CounterSample, Lane, Span
from app.traces.service import open_job_trace
from app.traces.store import KINDS, TraceClosed, TraceWriter, iter_parts, read_summary, trace_dir


def op(start: int, dur: int = 10, tid: int = 1, kind: str = "write", size: int | None = 16384,
       path: str | None = "/d/t.ibd", offset: int | None = 0) -> Operation:  # fmt: skip
    name = {"read": "pread64", "write": "pwrite64", "fsync": "fsync"}.get(kind, kind)
    return Operation(start, dur, tid, name, kind, path, offset, size, "OK")


def read_ops(directory: Path) -> list[dict[str, object]]:
    """Every operation as queries see it: from the parts while recording, the segments once closed."""
    data = open_trace_data(directory)
    assert data is not None
    rows: list[dict[str, object]] = []
    for segment in data.segments:
        for tid, (begin, end) in segment.lanes.items():
            rows.extend(
                {
                    "tid": tid,
                    "start_us": int(segment.start[row]),
                    "op": segment.ops[segment.op[row]],
                    "kind": KINDS[segment.kind[row]],
                    "path": segment.paths[segment.path[row]] if segment.path[row] >= 0 else None,
                }
                for row in range(begin, end)
            )
    return rows


def test_parts_appear_while_writing_and_close_marks_complete(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    writer = TraceWriter(directory, flush_every_ops=1000, flush_every_s=0.2)
    writer.add_operations(op(1_000 + i, tid=i % 3) for i in range(2500))
    deadline = time.monotonic() + 5
    while len(read_ops(directory)) < 2000 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(read_ops(directory)) >= 2000, "full batches are written without waiting for close"
    live = read_summary(directory)
    assert live is not None and live.status == "recording" and live.operations >= 2000
    summary = writer.close()
    rows = read_ops(directory)
    assert len(rows) == 2500 and summary.operations == 2500
    assert summary.status == "complete"
    assert summary.t_min_us == 1_000 and summary.t_max_us == 1_000 + 2499 + 10
    assert summary.kinds["write"] == 2500 and summary.bytes_written == 2500 * 16384
    assert {tid: t.operations for tid, t in summary.lane_totals.items()} == {0: 834, 1: 833, 2: 833}
    on_disk = read_summary(directory)
    assert on_disk is not None and on_disk.status == "complete"


def test_timer_flushes_a_small_batch_within_the_interval(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "t", flush_every_ops=1_000_000, flush_every_s=0.1)
    writer.add_operations([op(5)])
    time.sleep(0.6)
    assert len(read_ops(tmp_path / "t")) == 1
    writer.close()


def test_each_part_is_sorted_by_lane_then_time(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t") as writer:
        writer.add_operations([op(30, tid=2), op(10, tid=2), op(20, tid=1), op(5, tid=3)])
    rows = read_ops(tmp_path / "t")
    assert [(r["tid"], r["start_us"]) for r in rows] == [(1, 20), (2, 10), (2, 30), (3, 5)]
    assert rows[0]["path"] == "/d/t.ibd" and rows[0]["kind"] == "write" and rows[0]["op"] == "pwrite64"


def test_writers_in_several_threads_lose_nothing(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "t", flush_every_ops=500, flush_every_s=0.05)

    def produce(tid: int) -> None:
        for i in range(20):
            writer.add_operations(op(i * 100 + j, tid=tid) for j in range(100))
            writer.add_spans([Span(tid, i * 100, 50, "cpu", "running")])

    threads = [threading.Thread(target=produce, args=(tid,)) for tid in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    summary = writer.close()
    assert summary.operations == 4 * 20 * 100 and len(read_ops(tmp_path / "t")) == 8000
    assert summary.spans == 80


def test_memory_is_bounded_by_back_pressure(tmp_path: Path) -> None:
    """A producer far faster than the disk waits: never more than two batches queue up."""
    writer = TraceWriter(tmp_path / "t", flush_every_ops=100, flush_every_s=10)
    peak = 0
    for i in range(200):
        writer.add_operations(op(i * 100 + j) for j in range(100))
        peak = max(peak, writer._queue.qsize())
    assert peak <= 2
    assert writer.close().operations == 20_000


def test_lanes_are_replaced_and_spans_counters_kept(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t") as writer:
        writer.set_lane(Lane(7, "connection 3", "thread/sql/one_connection", "mariadbd", 100, 3))
        writer.set_lane(Lane(7, "page cleaner", "thread/innodb/page_cleaner_thread", "mariadbd", 100))
        writer.set_lane(Lane(8, "mysql client", process="mysql"))
        writer.add_spans([Span(7, 10, 5, "cpu", "running"), Span(7, 15, 5, "state", "Sending data")])
        writer.add_counters([CounterSample("cpu.iowait", 10, 1.5, "%"), CounterSample("cpu.iowait", 20, 2.5, "%")])
        writer.set_meta(backend="strace", aio_mode="io_uring")
    summary = read_summary(tmp_path / "t")
    assert summary is not None
    assert [(lane["tid"], lane["role"]) for lane in summary.lanes] == [(7, "page cleaner"), (8, "mysql client")]
    assert summary.spans == 2 and summary.counter_samples == 2 and summary.counters == {"cpu.iowait": "%"}
    assert summary.meta == {"backend": "strace", "aio_mode": "io_uring"}
    data = open_trace_data(tmp_path / "t")
    assert data is not None
    spans = data.spans
    assert [
        (int(t), int(s), int(d), spans.tracks[k], spans.labels[label])
        for t, s, d, k, label in zip(spans.tid, spans.start, spans.duration, spans.track, spans.label, strict=True)
    ] == [(7, 10, 5, "cpu", "running"), (7, 15, 5, "state", "Sending data")]
    times, values = data.counters.series["cpu.iowait"]
    assert times.tolist() == [10, 20] and values.tolist() == [1.5, 2.5]
    assert not list(iter_parts(tmp_path / "t", "ops")), "closing compacts the parts away"


def test_malformed_lines_all_counted_first_hundred_kept(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t") as writer:
        writer.add_malformed(Malformed(n, "bad", f"line {n}") for n in range(1, 251))
    summary = read_summary(tmp_path / "t")
    assert summary is not None and summary.malformed_lines == 250 and len(summary.malformed) == 100
    assert summary.malformed[0] == {"line_no": 1, "reason": "bad", "text": "line 1"}


def test_closed_writer_refuses_more_and_an_exception_marks_failed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="boom"), TraceWriter(tmp_path / "t") as writer:
        writer.add_operations([op(1)])
        raise ValueError("boom")
    summary = read_summary(tmp_path / "t")
    assert summary is not None and summary.status == "failed" and summary.operations == 1
    with pytest.raises(TraceClosed):
        writer.add_operations([op(2)])


def test_a_new_writer_starts_the_trace_over(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t") as writer:
        writer.add_operations([op(1), op(2)])
    with TraceWriter(tmp_path / "t") as writer:
        writer.add_operations([op(3)])
    assert [r["start_us"] for r in read_ops(tmp_path / "t")] == [3]


def test_open_job_trace_keeps_the_summary_row(job_id: int) -> None:
    writer = open_job_trace(job_id, backend="auto", flush_every_s=0.1)
    with session_scope() as session:
        row = session.scalar(select(Trace).where(Trace.job_id == job_id))
        assert row is not None and row.status == "recording" and row.source == "capture"
    writer.set_meta(backend="strace", aio_mode="aio", visibility="all syscalls", fallback_reason="no bpftrace")
    writer.add_operations([op(100, tid=1, kind="read"), op(200, tid=2, kind="write", size=10)])
    writer.set_lane(Lane(1, "connection 1"))
    writer.close()
    with session_scope() as session:
        row = session.scalar(select(Trace).where(Trace.job_id == job_id))
        assert row is not None
        assert (row.status, row.backend, row.aio_mode, row.visibility, row.fallback_reason) == (
            "complete",
            "strace",
            "aio",
            "all syscalls",
            "no bpftrace",
        )
        assert (row.operations, row.lanes, row.bytes_read, row.bytes_written) == (2, 2, 16384, 10)
        assert (row.t_min_us, row.t_max_us) == (100, 210)
        assert row.kinds["read"] == 1 and row.finished_at is not None
    assert (trace_dir(get_settings(), job_id) / "meta.json").exists()


def test_runs_of_small_parts_are_merged_and_nothing_is_lost(tmp_path: Path) -> None:
    """A quiet capture flushes a tiny part every second: 32 of them become one file."""
    writer = TraceWriter(tmp_path / "t", flush_every_ops=1_000, flush_every_s=60)
    for i in range(40):
        writer.add_operations([op(i * 100 + j, tid=1 + j % 2) for j in range(5)])
        writer.add_spans([Span(1, i * 100, 50, "cpu", "running")])
        writer.flush()
    parts = [p.name for p in iter_parts(tmp_path / "t", "ops")]
    assert len(parts) == 1 + 8 and parts[0] == "part-000001-000063.parquet"
    rows = read_ops(tmp_path / "t")
    assert sorted(int(str(r["start_us"])) for r in rows) == sorted(i * 100 + j for i in range(40) for j in range(5))
    summary = writer.close()
    assert summary.operations == 200 and summary.spans == 40
    assert len(read_ops(tmp_path / "t")) == 200


def test_operations_in_columns_join_the_objects(tmp_path: Path) -> None:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

    columns = pa.table(
        {
            "start_us": [5, 1],
            "duration_us": [2, 3],
            "tid": [9, 9],
            "op": ["pread64", "pwrite64"],
            "kind": ["read", "write"],
            "path": ["/d/c.ibd", None],
            "offset": [0, None],
            "size": [100, None],
            "result": ["100", "OK"],
        }
    )
    with TraceWriter(tmp_path / "t") as writer:
        writer.add_operation_table(columns)
        writer.add_operations([op(3, tid=9)])
        with pytest.raises(ValueError, match="lacks the columns"):
            writer.add_operation_table(columns.drop_columns(["kind"]))
    rows = read_ops(tmp_path / "t")
    assert [(r["start_us"], r["op"], r["path"]) for r in rows] == [
        (1, "pwrite64", None),
        (3, "pwrite64", "/d/t.ibd"),
        (5, "pread64", "/d/c.ibd"),
    ]


def test_producers_of_one_job_share_its_writer(job_id: int) -> None:
    """The IO capture and the CPU sampler both open the job's trace: one writer, ended by the last close."""
    capture = open_job_trace(job_id, backend="strace")
    sampler = open_job_trace(job_id, backend="strace")
    assert sampler is capture
    capture.add_operations([op(1)])
    capture.close()
    sampler.add_spans([Span(1, 0, 5, "cpu", "running")])  # still open for the other holder
    with session_scope() as session:
        row = session.scalar(select(Trace).where(Trace.job_id == job_id))
        assert row is not None and row.status == "recording"
    sampler.close(status="failed")
    with session_scope() as session:
        row = session.scalar(select(Trace).where(Trace.job_id == job_id))
        assert row is not None and row.status == "failed" and row.operations == 1
    fresh = open_job_trace(job_id, backend="ebpf")  # a retry starts over
    assert fresh is not capture
    fresh.close()
