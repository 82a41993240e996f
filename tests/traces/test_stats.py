"""Statistics on small traces with answers worked out by hand."""

from pathlib import Path

import numpy as np
import pytest

from app.traces.operation import Operation
from app.traces.records import Lane, Span
from app.traces.stats import log_histogram, read_operations, read_stats
from app.traces.window import Filters
from tests.traces.helpers import make_trace, op

HISTOGRAMS = [
    ("one value", [5], [(8, 1)]),
    ("zero and one share the first bucket", [0, 1, 2], [(1, 2), (2, 1)]),
    ("bounds are inclusive", [1, 2, 3, 4, 5, 8, 9], [(1, 1), (2, 1), (4, 2), (8, 2), (16, 1)]),
    ("empty buckets between are kept, before are not", [100, 1000], [(128, 1), (256, 0), (512, 0), (1024, 1)]),
    ("16 KiB pages", [16384] * 3, [(16384, 3)]),
    ("nothing", [], []),
]


@pytest.mark.parametrize(("values", "expected"), [c[1:] for c in HISTOGRAMS], ids=[c[0] for c in HISTOGRAMS])
def test_log_histogram(values: list[int], expected: list[tuple[int, int]]) -> None:
    assert log_histogram(np.array(values, dtype=np.int64)) == expected


def test_latency_percentiles_are_nearest_rank(tmp_path: Path) -> None:
    # Reads lasting 1..100 us, one after the other on one thread.
    data = make_trace(tmp_path / "t", [op(i * 1000, i, kind="read", size=4096) for i in range(1, 101)])
    stats = read_stats(data, t0=0, t1=200_000, filters=Filters())
    (reads,) = stats["by_kind"]
    assert reads["kind"] == "read" and reads["count"] == 100 and reads["bytes"] == 409_600
    assert reads["latency_us"] == {"p50": 50, "p95": 95, "p99": 99, "max": 100}
    assert reads["mb_per_s"] == round(409_600 / 1e6 / 0.2, 3)  # over the 0.2 s window
    assert stats["by_op"][0]["op"] == "pread64" and stats["by_op"][0]["latency_us"]["p95"] == 95


def test_sequential_and_random_accesses_per_file_and_thread(tmp_path: Path) -> None:
    page = 16384
    data = make_trace(
        tmp_path / "t",
        [
            op(0, offset=0, path="/d/a.ibd"),  # first on a by tid 1: random
            op(10, offset=page, path="/d/a.ibd"),  # sequential
            op(20, offset=2 * page, path="/d/a.ibd"),  # sequential
            op(30, offset=0, path="/d/b.ibd"),  # first on b: random (even at offset 0)
            op(40, offset=100_000, path="/d/a.ibd"),  # a jump: random
            op(50, tid=2, offset=3 * page, path="/d/a.ibd"),  # follows tid 1's last... but tid 2's first: random
            op(60, tid=2, kind="fsync", path="/d/a.ibd"),  # not an access
            op(70, tid=2, kind="read", offset=3 * page + page, size=page, path="/d/a.ibd"),  # sequential for tid 2
        ],
    )
    access = read_stats(data, t0=0, t1=100, filters=Filters())["access"]
    assert access == {"sequential_ops": 3, "random_ops": 4, "sequential_pct": round(300 / 7, 3)}


def test_fsync_share_busy_threads_cpu_and_files(tmp_path: Path) -> None:
    data = make_trace(
        tmp_path / "t",
        [
            op(0, 10, tid=1, kind="read", size=1000, path="/d/a.ibd"),
            op(5, 15, tid=1, kind="read", size=1000, path="/d/a.ibd"),  # overlaps: tid 1 busy [0, 20)
            op(50, 60, tid=2, kind="fsync", path="/d/a.ibd"),
            op(0, 15, tid=3, kind="write", size=500, path="/d/b.ibd"),
        ],
        spans=[Span(1, 0, 30, "cpu", "running"), Span(1, 30, 70, "cpu", "blocked")],
        lanes=[Lane(1, "connection 1"), Lane(2, "page cleaner")],
    )
    stats = read_stats(data, t0=0, t1=100, filters=Filters())
    assert stats["fsync_time_pct"] == 60.0  # 60 of 10 + 15 + 60 + 15 us
    assert stats["threads"] == [
        {"tid": 1, "role": "connection 1", "busy_pct": 20.0, "cpu_pct": 30.0, "operations": 2, "bytes": 2000},
        {"tid": 2, "role": "page cleaner", "busy_pct": 50.0, "cpu_pct": None, "operations": 1, "bytes": 0},
        {"tid": 3, "role": "thread 3", "busy_pct": 15.0, "cpu_pct": None, "operations": 1, "bytes": 500},
    ]
    assert stats["files"] == [
        {"path": "/d/a.ibd", "reads": 2, "writes": 0, "fsyncs": 1, "bytes_read": 2000, "bytes_written": 0,
         "busy_us": 85},
        {"path": "/d/b.ibd", "reads": 0, "writes": 1, "fsyncs": 0, "bytes_read": 0, "bytes_written": 500,
         "busy_us": 15},
    ]  # fmt: skip
    assert [h["kind"] for h in stats["latency_histogram"]] == ["read", "write", "fsync"]
    assert [h["kind"] for h in stats["size_histogram"]] == ["read", "write"]


def test_window_and_filters_select_operations(tmp_path: Path) -> None:
    data = make_trace(
        tmp_path / "t",
        [
            op(i * 100, 10, tid=1 + i % 2, kind="write" if i % 3 else "read", path=f"/d/t{i % 4}.ibd")
            for i in range(100)
        ],
    )
    whole = read_stats(data, t0=0, t1=10_000, filters=Filters())
    assert sum(k["count"] for k in whole["by_kind"]) == 100
    half = read_stats(data, t0=0, t1=5_000, filters=Filters())
    assert sum(k["count"] for k in half["by_kind"]) == 50 and half["duration_us"] == 5_000
    reads = read_stats(data, t0=0, t1=10_000, filters=Filters(kinds=frozenset({"read"})))
    assert [k["kind"] for k in reads["by_kind"]] == ["read"] and reads["by_kind"][0]["count"] == 34
    lane_two = read_stats(data, t0=0, t1=10_000, filters=Filters(tids=frozenset({2})))
    assert [t["tid"] for t in lane_two["threads"]] == [2] and lane_two["threads"][0]["operations"] == 50
    on_path = read_stats(data, t0=0, t1=10_000, filters=Filters(path="t3.ibd"))
    assert [f["path"] for f in on_path["files"]] == ["/d/t3.ibd"]


def test_empty_selection_gives_zeros(tmp_path: Path) -> None:
    data = make_trace(tmp_path / "t", [op(0)])
    stats = read_stats(data, t0=1_000, t1=2_000, filters=Filters())
    assert stats["by_kind"] == [] and stats["files"] == [] and stats["fsync_time_pct"] == 0.0
    assert stats["access"] == {"sequential_ops": 0, "random_ops": 0, "sequential_pct": 0.0}


def test_operations_are_paged_by_start_time(tmp_path: Path) -> None:
    operations = [op(1000 - i * 10, 5, tid=1 + i % 3) for i in range(100)]
    operations.append(Operation(500, 1, 9, "openat", "open", None, None, None, "ENOENT"))
    data = make_trace(tmp_path / "t", operations, flush_every_ops=30)  # several parts: a merge across them
    page = read_operations(data, t0=0, t1=2_000, filters=Filters(), offset=40, limit=3)
    assert page["total"] == 101
    assert [(item["start_us"], item["tid"]) for item in page["items"]] == [(410, 3), (420, 2), (430, 1)]
    opened = read_operations(data, t0=0, t1=2_000, filters=Filters(kinds=frozenset({"open"})), offset=0, limit=10)
    assert opened["items"] == [
        {"tid": 9, "start_us": 500, "duration_us": 1, "op": "openat", "kind": "open", "path": None, "offset": None,
         "size": None, "result": "ENOENT"},
    ]  # fmt: skip
    assert read_operations(data, t0=0, t1=2_000, filters=Filters(), offset=200, limit=10)["items"] == []


def test_sequential_runs_continue_across_segments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.traces import compact

    monkeypatch.setattr(compact, "SEGMENT_OPERATIONS", 10)
    page = 16384
    operations = [op(i * 10, offset=i * page) for i in range(50)]  # one long sequential stream
    data = make_trace(tmp_path / "t", operations, flush_every_ops=10)
    assert len(data.segments) == 5
    access = read_stats(data, t0=0, t1=1_000, filters=Filters())["access"]
    assert access == {"sequential_ops": 49, "random_ops": 1, "sequential_pct": 98.0}
