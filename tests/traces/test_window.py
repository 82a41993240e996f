"""Level of detail: bucket arithmetic, the switch to raw operations, item caps, spans and counters."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.traces import lod, window
from app.traces.records import CounterSample, Lane, Span
from app.traces.window import Filters, read_window
from tests.traces.helpers import make_trace, op

CUT_CASES = [
    # (start, end, lo, hi) with origin 0 and width 10 -> [(bucket, length), ...]
    ("inside one bucket", 5, 8, 0, 100, [(0, 3)]),
    ("across two edges", 5, 25, 0, 100, [(0, 5), (1, 10), (2, 5)]),
    ("ends on an edge", 0, 10, 0, 100, [(0, 10)]),
    ("zero length on an edge", 10, 10, 0, 100, [(1, 0)]),
    ("started before the window", -5, 5, 0, 100, [(0, 5)]),
    ("ends after the window", 95, 120, 0, 100, [(9, 5)]),
]


@pytest.mark.parametrize(
    ("start", "end", "lo", "hi", "expected"), [c[1:] for c in CUT_CASES], ids=[c[0] for c in CUT_CASES]
)
def test_cut_at_bucket_edges(start: int, end: int, lo: int, hi: int, expected: list[tuple[int, int]]) -> None:
    pieces = lod.cut(np.array([start]), np.array([end]), 0, 10, lo, hi)
    assert list(zip(pieces.bucket.tolist(), pieces.length.tolist(), strict=True)) == expected
    assert pieces.first.tolist() == [True] + [False] * (len(expected) - 1)


def test_union_merges_overlaps_per_slot_only() -> None:
    slots = np.array([0, 0, 0, 1])
    starts = np.array([0, 5, 30, 2])
    ends = np.array([10, 20, 40, 8])
    merged = lod.union_intervals(slots, starts, ends)
    assert [m.tolist() for m in merged] == [[0, 0, 1], [0, 30, 2], [20, 40, 8]]


def test_dense_buckets_busy_is_the_union_kind_is_the_most_time() -> None:
    # Lane 0: a write [0,10), then reads [10,15) and [12,14) overlapping; buckets of 10 from 0.
    dense = lod.dense_buckets(
        np.array([0, 0, 0]),
        np.array([0, 10, 12]),
        np.array([10, 15, 14]),
        np.array([1, 0, 0], dtype=np.int8),  # write, read, read
        np.array([100, 7, 5]),
        n_slots=1,
        origin=0,
        width=10,
        n_buckets=2,
    )
    assert dense.busy_us[0].tolist() == [10, 5]
    assert dense.count[0].tolist() == [1, 2]
    assert dense.bytes[0].tolist() == [100, 12]
    assert dense.kind_us[0].argmax(axis=1).tolist() == [1, 0]


def lane(result: dict[str, Any], tid: int) -> dict[str, Any]:
    return next(item for item in result["lanes"] if item["tid"] == tid)


def test_buckets_at_the_edges(tmp_path: Path) -> None:
    data = make_trace(
        tmp_path / "t",
        [op(1000, 30, kind="write"), op(1040, 20, kind="read", size=4096), op(1070, 5, kind="fsync")],
    )
    result = read_window(data, t0=1000, t1=1100, width_px=2, filters=Filters())
    assert result["bucket_us"] == 50
    only = lane(result, 1)
    assert only["detail"] == "buckets" and only["operations"] == []
    # [1000,1050): write 30 us + the first 10 us of the read; [1050,1100): 10 us of read, 5 of fsync.
    assert only["buckets"] == [
        {"i": 0, "busy": 0.8, "kind": "write", "count": 2, "bytes": 16384 + 4096},
        {"i": 1, "busy": 0.3, "kind": "read", "count": 1, "bytes": 0},
    ]


def test_last_bucket_is_shorter_and_earlier_operations_count_in_the_first(tmp_path: Path) -> None:
    data = make_trace(tmp_path / "t", [op(990, 30), op(1040, 10), op(1080, 10)])
    result = read_window(data, t0=1000, t1=1090, width_px=2, filters=Filters())
    assert result["bucket_us"] == 45  # ceil(90 / 2); the last bucket is [1045, 1090)
    buckets = lane(result, 1)["buckets"]
    # [1000,1045): 20 us of the first (clipped) + 5 of the second; [1045,1090): 5 + 10 of 45 us.
    assert [(b["i"], b["busy"], b["count"]) for b in buckets] == [(0, round(25 / 45, 4), 2), (1, round(15 / 45, 4), 1)]


def test_few_operations_come_raw_more_come_as_buckets(tmp_path: Path) -> None:
    data = make_trace(tmp_path / "t", [op(1000), op(1020, kind="read", size=100), op(1040, kind="fsync")])
    raw = lane(read_window(data, t0=1000, t1=1100, width_px=3, filters=Filters()), 1)
    assert raw["detail"] == "operations" and raw["buckets"] == []
    assert raw["operations"][1] == {
        "start_us": 1020,
        "duration_us": 10,
        "op": "pread64",
        "kind": "read",
        "path": "/d/t.ibd",
        "offset": 0,
        "size": 100,
        "result": "OK",
    }
    assert lane(read_window(data, t0=1000, t1=1100, width_px=2, filters=Filters()), 1)["detail"] == "buckets"


def test_raw_operations_include_one_that_started_before_the_window(tmp_path: Path) -> None:
    data = make_trace(tmp_path / "t", [op(900, 200), op(1500), op(3000)])
    operations = lane(read_window(data, t0=1000, t1=2000, width_px=100, filters=Filters()), 1)["operations"]
    assert [o["start_us"] for o in operations] == [900, 1500]


@pytest.mark.parametrize("width_px", [1, 7, 100, 1000])
def test_never_more_items_than_pixels(tmp_path: Path, width_px: int) -> None:
    data = make_trace(tmp_path / "t", [op(1000 + i * 13, 7, tid=1 + i % 3) for i in range(20_000)])
    result = read_window(data, t0=1000, t1=1000 + 20_000 * 13, width_px=width_px, filters=Filters())
    for item in result["lanes"]:
        assert len(item["buckets"]) + len(item["operations"]) + len(item["spans"]) <= 2 * width_px
        expected = sum(1 for i in range(20_000) if 1 + i % 3 == item["tid"])
        assert sum(b["count"] for b in item["buckets"]) + len(item["operations"]) == expected


def test_pyramid_answers_like_the_exact_sum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy lane zoomed out is summed from the pyramid: counts and bytes exactly, busy time within one bucket."""
    rng = np.random.default_rng(3)
    starts = np.cumsum(rng.integers(5, 60, 100_000)) + 1_000_000
    durations = rng.integers(1, 40, 100_000)
    operations = [
        op(int(s), int(d), tid=7, kind="write" if i % 3 else "read")
        for i, (s, d) in enumerate(zip(starts, durations, strict=True))
    ]
    data = make_trace(tmp_path / "t", operations)
    assert data.pyramids[0], "a closed trace has its pyramid"
    t0, t1 = int(starts[0]) + 12_345, int(starts[-1]) - 6_789
    from_pyramid = lane(read_window(data, t0=t0, t1=t1, width_px=400, filters=Filters()), 7)["buckets"]
    monkeypatch.setattr(window, "EXACT_OPS_PER_PIXEL", 10**9)
    exact = lane(read_window(data, t0=t0, t1=t1, width_px=400, filters=Filters()), 7)["buckets"]
    assert len(from_pyramid) == len(exact) == 400
    # Level buckets cut by the window's edges bring their share: the totals agree to a fraction of one.
    total = sum(b["count"] for b in exact)
    assert abs(sum(b["count"] for b in from_pyramid) - total) / total < 0.001
    busy_p = np.array([b["busy"] for b in from_pyramid])
    busy_e = np.array([b["busy"] for b in exact])
    assert abs(busy_p.sum() - busy_e.sum()) / busy_e.sum() < 0.01
    # Smear stays local: a bucket differs by at most what its neighbour could have lent it.
    assert np.abs(np.cumsum(busy_p) - np.cumsum(busy_e)).max() <= 1.0
    assert [b["kind"] for b in from_pyramid].count("write") > 300


@pytest.mark.parametrize("width_px", [4, 40])  # from the pyramid, then summed exactly
def test_overlapping_operations_count_once_in_busy(tmp_path: Path, width_px: int) -> None:
    data = make_trace(tmp_path / "t", [op(i * 2, 50, tid=0) for i in range(50)])  # async: up to 25 in flight
    result = read_window(data, t0=0, t1=200, width_px=width_px, filters=Filters())
    buckets = lane(result, 0)["buckets"]
    assert max(b["busy"] for b in buckets) == 1.0
    assert sum(b["busy"] for b in buckets) * result["bucket_us"] == pytest.approx(148, abs=0.01)


def test_filters_by_kind_lane_and_path(tmp_path: Path) -> None:
    data = make_trace(
        tmp_path / "t",
        [
            op(0, 10, tid=1, kind="write", path="/d/a.ibd"),
            op(20, 10, tid=1, kind="fsync", path="/d/a.ibd"),
            op(40, 10, tid=2, kind="read", path="/d/b.ibd"),
        ],
        lanes=[Lane(1, "page cleaner"), Lane(2, "connection 4")],
    )

    def starts(filters: Filters) -> dict[int, list[int]]:
        result = read_window(data, t0=0, t1=100, width_px=100, filters=filters)
        return {item["tid"]: [o["start_us"] for o in item["operations"]] for item in result["lanes"]}

    assert starts(Filters()) == {1: [0, 20], 2: [40]}
    assert starts(Filters(kinds=frozenset({"fsync", "read"}))) == {1: [20], 2: [40]}
    assert starts(Filters(tids=frozenset({2}))) == {2: [40]}
    assert starts(Filters(roles=frozenset({"page cleaner"}))) == {1: [0, 20]}
    assert starts(Filters(path="b.ibd")) == {1: [], 2: [40]}


def test_spans_widened_to_a_bucket_or_merged(tmp_path: Path) -> None:
    few = [Span(1, 100, 1, "cpu", "running"), Span(1, 500, 300, "state", "Sending data")]
    data = make_trace(tmp_path / "few", [op(0)], spans=few)
    spans = lane(read_window(data, t0=0, t1=1000, width_px=100, filters=Filters()), 1)["spans"]
    assert spans == [
        {"start_us": 100, "duration_us": 10, "track": "cpu", "label": "running"},
        {"start_us": 500, "duration_us": 300, "track": "state", "label": "Sending data"},
    ]
    # 1000 alternating 1 us samples, then 1000 us of "blocked": per 10 us bucket "running" wins (6 of 10 us).
    many = [Span(1, i, 1, "cpu", "running" if i % 10 < 6 else "runnable") for i in range(1000)]
    many.append(Span(1, 1000, 1000, "cpu", "blocked"))
    data = make_trace(tmp_path / "many", [op(0)], spans=many)
    spans = lane(read_window(data, t0=0, t1=2000, width_px=200, filters=Filters()), 1)["spans"]
    assert spans == [
        {"start_us": 0, "duration_us": 1000, "track": "cpu", "label": "running"},
        {"start_us": 1000, "duration_us": 1000, "track": "cpu", "label": "blocked"},
    ]


def test_counters_keep_min_and_max_per_bucket(tmp_path: Path) -> None:
    samples = [CounterSample("cpu.iowait", t, float(t % 97), "%") for t in range(10_000)]
    data = make_trace(tmp_path / "t", [op(0)], counters=samples)
    (series,) = read_window(data, t0=0, t1=10_000, width_px=100, filters=Filters())["counters"]
    assert series["track"] == "cpu.iowait" and series["unit"] == "%"
    points = series["points"]
    assert len(points) <= 200 and [p[0] for p in points] == sorted(p[0] for p in points)
    assert min(p[1] for p in points) == 0.0 and max(p[1] for p in points) == 96.0
    few = read_window(data, t0=0, t1=50, width_px=100, filters=Filters())["counters"][0]["points"]
    assert few == [[t, float(t)] for t in range(50)]


def test_a_trace_still_recording_answers_like_a_closed_one(tmp_path: Path) -> None:
    operations = [op(i * 10, 5, tid=1 + i % 4) for i in range(30_000)]
    live = make_trace(tmp_path / "live", operations, close=False, flush_every_ops=7_000)
    assert len(live.segments) > 1 and not live.summary.compacted
    closed = make_trace(tmp_path / "closed", operations)
    assert closed.summary.compacted
    for width in (50, 5_000):
        a = read_window(live, t0=0, t1=300_000, width_px=width, filters=Filters())
        b = read_window(closed, t0=0, t1=300_000, width_px=width, filters=Filters())
        assert a == b


def test_columns_layout_holds_the_same_data(tmp_path: Path) -> None:
    data = make_trace(tmp_path / "t", [op(i * 10, 5) for i in range(1000)], spans=[Span(1, 0, 50, "cpu", "running")])
    for width in (10, 2000):
        rows = read_window(data, t0=0, t1=10_000, width_px=width, filters=Filters())
        columns = read_window(data, t0=0, t1=10_000, width_px=width, filters=Filters(), columns=True)
        for name in ("buckets", "operations", "spans"):
            assert window.as_rows(columns["lanes"][0][name]) == rows["lanes"][0][name]
