"""Statistics of the operations in a window (or the whole trace), computed with numpy.

Definitions a DBA can check by hand:
- latency percentiles are nearest-rank (the smallest duration with at least p% of the operations at or
  below it), so they are always durations that occurred;
- histograms have power-of-two buckets: ``le_us``/``le_bytes`` is the bucket's upper bound (inclusive),
  each bucket counts the values above the previous bound (0 and 1 both fall in "le 1"); they run from
  the first non-empty bucket to the one holding the maximum;
- ``mb_per_s`` is bytes / window duration, in MB (10^6 bytes) per second;
- a thread's ``busy_pct`` is the share of the window it spent inside at least one operation;
  ``cpu_pct`` the share its CPU spans say "running" (null without CPU spans);
- a file's ``busy_us`` is the summed duration of its operations;
- an access (a read or write with a file and an offset) is sequential when its offset is the previous
  access's offset + size, on the same file by the same thread; ``sequential_pct`` is of all accesses;
- ``fsync_time_pct`` is fsync time as a share of the time of all operations selected.
Operations are selected by overlapping the window; their whole duration counts.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from app.traces import lod
from app.traces.reader import TraceData
from app.traces.segment import KIND_CODE, NULL_INT, Int64s, Segment
from app.traces.store import KINDS
from app.traces.window import Filters, lane_roles, path_codes, select_operations, selected_lanes

PERCENTILES = (50, 95, 99)


@dataclass
class Columns:
    """The selected operations' columns, with op and path as codes into trace-wide name lists."""

    tid: Int64s
    start: Int64s
    duration: Int64s
    kind: npt.NDArray[np.int8]
    op: Int64s
    path: Int64s  # -1: none
    offset: Int64s
    size: Int64s
    sequential: npt.NDArray[np.bool_]
    segment: npt.NDArray[np.int32]  # which segment each row came from: rows are sorted by (tid, start) within one
    ops: list[str]
    paths: list[str]


def _global_codes(names: list[str], table: dict[str, int], codes: npt.NDArray[np.int32]) -> Int64s:
    mapping = np.array([table.setdefault(name, len(table)) for name in names] + [-1], dtype=np.int64)
    return mapping[codes]  # code -1 picks the appended -1


def _rows_of(
    segment: Segment, tids: list[int], t0: int, t1: int, filters: Filters
) -> npt.NDArray[np.intp] | npt.NDArray[np.bool_] | slice:
    """Which rows of the segment are selected: row numbers for a narrow window, else a mask (or all)."""
    ranges = [segment.window_rows(tid, t0, t1) for tid in tids]
    narrow = sum(hi - lo for lo, hi in ranges) * 4 < len(segment)
    if narrow:
        rows: npt.NDArray[np.intp] = np.concatenate(
            [np.arange(lo, hi) for lo, hi in ranges if lo < hi] or [np.empty(0, dtype=np.intp)]
        )
        keep = (segment.end[rows] > t0) | (segment.start[rows] >= t0)
        if (kind_mask := filters.kind_mask()) is not None:
            keep &= kind_mask[segment.kind[rows]]
        if (codes := path_codes(segment, filters.path)) is not None:
            keep &= np.isin(segment.path[rows], codes)
        picked: npt.NDArray[np.intp] = rows[keep]
        return picked
    mask: npt.NDArray[np.bool_] | None = None
    if segment.t_min < t0 or segment.t_max > t1:
        mask = (segment.start < t1) & ((segment.end > t0) | (segment.start >= t0))
    if set(tids) != set(segment.lanes):
        in_lanes = np.zeros(len(segment), dtype=np.bool_)
        for tid in tids:
            begin, end = segment.lanes.get(tid, (0, 0))
            in_lanes[begin:end] = True
        mask = in_lanes if mask is None else mask & in_lanes
    if (kind_mask := filters.kind_mask()) is not None:
        of_kind = kind_mask[segment.kind]
        mask = of_kind if mask is None else mask & of_kind
    if (codes := path_codes(segment, filters.path)) is not None:
        on_path = np.isin(segment.path, codes)
        mask = on_path if mask is None else mask & on_path
    return slice(None) if mask is None else mask


def gather(data: TraceData, tids: list[int], t0: int, t1: int, filters: Filters) -> Columns:
    """The selected operations' columns, segment after segment (each sorted by tid, then start)."""
    ops: dict[str, int] = {}
    paths: dict[str, int] = {}
    pieces: list[list[npt.NDArray[Any]]] = []
    for part in data.segments:
        rows = _rows_of(part, tids, t0, t1, filters)
        pieces.append(
            [
                part.tid[rows],
                part.start[rows],
                part.duration[rows],
                part.kind[rows],
                _global_codes(part.ops, ops, part.op[rows]),
                _global_codes(part.paths, paths, part.path[rows]),
                part.offset[rows],
                part.size[rows],
                part.sequential[rows],
                np.full(len(part.start[rows]), len(pieces), dtype=np.int32),
            ]
        )
    dtypes = (np.int64,) * 3 + (np.int8,) + (np.int64,) * 4 + (np.bool_, np.int32)
    columns: list[Any] = (
        [np.concatenate(column) for column in zip(*pieces, strict=True)]
        if pieces
        else [np.empty(0, dtype=dtype) for dtype in dtypes]
    )
    tid, start, duration, kind, op, path, offset, size, sequential, segment = columns
    return Columns(tid, start, duration, kind, op, path, offset, size, sequential, segment, list(ops), list(paths))


def nearest_rank(values: Int64s, percent: float) -> int:
    if not len(values):
        return 0
    return int(np.percentile(values, percent, method="inverted_cdf"))


def _latency(durations: Int64s) -> dict[str, int]:
    if not len(durations):
        return {"p50": 0, "p95": 0, "p99": 0, "max": 0}
    p50, p95, p99 = np.percentile(durations, PERCENTILES, method="inverted_cdf").astype(np.int64).tolist()
    return {"p50": p50, "p95": p95, "p99": p99, "max": int(durations.max())}


def log_histogram(values: Int64s) -> list[tuple[int, int]]:
    """(upper bound, count) for power-of-two buckets 1, 2, 4, ... up to the one holding the maximum."""
    if not len(values):
        return []
    clipped = np.maximum(values, 1)
    exponents = np.ceil(np.log2(clipped)).astype(np.int64)
    # log2 of huge ints in float may round: fix any value above its bound.
    exponents += (clipped > (1 << exponents)).astype(np.int64)
    counts = np.bincount(exponents)
    first = int(exponents.min())  # leading empty buckets say nothing
    return [(1 << e, int(c)) for e, c in enumerate(counts.tolist()) if e >= first]


def _group_stats(columns: Columns, moved: Int64s, mask: npt.NDArray[np.bool_], seconds: float) -> dict[str, Any]:
    durations = columns.duration[mask]
    total = int(moved[mask].sum())
    return {
        "count": int(mask.sum()),
        "bytes": total,
        "mb_per_s": round(total / 1e6 / seconds, 3) if seconds > 0 else 0.0,
        "latency_us": _latency(durations),
    }


def _busy_per_lane(columns: Columns, rank: Int64s, n_lanes: int, t0: int, t1: int) -> npt.NDArray[np.float64]:
    """Time each lane spent inside at least one operation, within [t0, t1).

    Rows of one segment are already sorted by (tid, start), so the union needs no sort; unions of
    different segments are added (segments cover consecutive stretches of the run, so they hardly overlap).
    """
    busy = np.zeros(n_lanes)
    bounds = np.flatnonzero(np.diff(columns.segment)) + 1
    for rows in np.split(np.arange(len(columns.segment)), bounds) if len(bounds) else [slice(None)]:
        starts = np.maximum(columns.start[rows], t0)
        ends = np.maximum(np.minimum(columns.start[rows] + columns.duration[rows], t1), starts)
        slots, u_start, u_end = lod.union_intervals(rank[rows].astype(np.int64), starts, ends)
        busy += np.bincount(slots, weights=u_end - u_start, minlength=n_lanes)
    return np.minimum(busy, max(0, t1 - t0))


def _files(columns: Columns, moved: Int64s, has_path: npt.NDArray[np.bool_]) -> list[dict[str, Any]]:
    paths = columns.path[has_path]
    kinds = columns.kind[has_path]
    n = len(columns.paths)

    def per_path(mask: npt.NDArray[np.bool_] | None = None, weights: Any = None) -> list[int]:
        keys = paths if mask is None else paths[mask]
        if weights is not None and mask is not None:
            weights = weights[mask]
        return [int(v) for v in np.bincount(keys, weights=weights, minlength=n).tolist()]

    reads, writes = kinds == KIND_CODE["read"], kinds == KIND_CODE["write"]
    counts = per_path()
    n_reads, n_writes, n_fsyncs = per_path(reads), per_path(writes), per_path(kinds == KIND_CODE["fsync"])
    bytes_read, bytes_written = per_path(reads, moved[has_path]), per_path(writes, moved[has_path])
    busy = per_path(None, columns.duration[has_path])
    files: list[dict[str, Any]] = [
        {
            "path": columns.paths[code],
            "reads": n_reads[code],
            "writes": n_writes[code],
            "fsyncs": n_fsyncs[code],
            "bytes_read": bytes_read[code],
            "bytes_written": bytes_written[code],
            "busy_us": busy[code],
        }
        for code in range(n)
        if counts[code]
    ]
    files.sort(key=lambda row: (-(row["bytes_read"] + row["bytes_written"]), -row["busy_us"], row["path"]))
    return files


def _cpu_running_us(data: TraceData, tid: int, t0: int, t1: int) -> int | None:
    spans = data.spans
    if "cpu" not in spans.tracks:
        return None
    begin, end = spans.groups.get((tid, spans.tracks.index("cpu")), (0, 0))
    if begin == end:
        return None
    running = [code for code, label in enumerate(spans.labels) if label == "running"]
    start = spans.start[begin:end]
    stop = start + spans.duration[begin:end]
    inside = np.clip(np.minimum(stop, t1) - np.maximum(start, t0), 0, None)
    return int(inside[np.isin(spans.label[begin:end], running)].sum())


def read_stats(data: TraceData, *, t0: int, t1: int, filters: Filters) -> dict[str, Any]:
    tids = selected_lanes(data, filters)
    columns = gather(data, tids, t0, t1, filters)
    moved = lod.io_bytes(columns.kind, columns.size)
    duration_us = max(0, t1 - t0)
    seconds = duration_us / 1e6
    by_kind = []
    latency_histogram, size_histogram = [], []
    for kind in KINDS:
        mask = columns.kind == KIND_CODE[kind]
        if not mask.any():
            continue
        by_kind.append({"kind": kind, **_group_stats(columns, moved, mask, seconds)})
        latency_histogram.append(
            {"kind": kind, "buckets": [{"le_us": le, "count": n} for le, n in log_histogram(columns.duration[mask])]}
        )
        sizes = columns.size[mask]
        sizes = sizes[sizes != NULL_INT]
        if len(sizes):
            size_histogram.append(
                {"kind": kind, "buckets": [{"le_bytes": le, "count": n} for le, n in log_histogram(sizes)]}
            )
    by_op = []
    for code in np.unique(columns.op).tolist():
        mask = columns.op == code
        kind = KINDS[int(columns.kind[mask][0])]
        by_op.append({"op": columns.ops[code], "kind": kind, **_group_stats(columns, moved, mask, seconds)})
    by_op.sort(key=lambda row: (-row["count"], row["op"]))
    roles = lane_roles(data)
    lane_ids = np.array(tids, dtype=np.int64)
    rank = np.searchsorted(lane_ids, columns.tid)
    n_lanes = len(tids)
    ops_per_lane = np.bincount(rank, minlength=n_lanes)
    bytes_per_lane = np.bincount(rank, weights=moved, minlength=n_lanes)
    busy_per_lane = _busy_per_lane(columns, rank, n_lanes, t0, t1)
    threads = []
    for slot, tid in enumerate(tids):
        running = _cpu_running_us(data, tid, t0, t1)
        threads.append(
            {
                "tid": tid,
                "role": roles.get(tid, {}).get("role", f"thread {tid}"),
                "busy_pct": round(100 * float(busy_per_lane[slot]) / duration_us, 3) if duration_us else 0.0,
                "cpu_pct": None if running is None or not duration_us else round(100 * running / duration_us, 3),
                "operations": int(ops_per_lane[slot]),
                "bytes": int(bytes_per_lane[slot]),
            }
        )
    has_path = columns.path >= 0
    files = _files(columns, moved, has_path)
    accesses = (
        (columns.offset != NULL_INT)
        & has_path
        & ((columns.kind == KIND_CODE["read"]) | (columns.kind == KIND_CODE["write"]))
    )
    sequential = int((columns.sequential & accesses).sum())
    n_accesses = int(accesses.sum())
    total_time = int(columns.duration.sum())
    fsync_time = int(columns.duration[columns.kind == KIND_CODE["fsync"]].sum())
    return {
        "t0_us": t0,
        "t1_us": t1,
        "duration_us": duration_us,
        "by_kind": by_kind,
        "by_op": by_op,
        "latency_histogram": latency_histogram,
        "size_histogram": size_histogram,
        "threads": threads,
        "files": files,
        "access": {
            "sequential_ops": sequential,
            "random_ops": n_accesses - sequential,
            "sequential_pct": round(100 * sequential / n_accesses, 3) if n_accesses else 0.0,
        },
        "fsync_time_pct": round(100 * fsync_time / total_time, 3) if total_time else 0.0,
    }


def read_operations(data: TraceData, *, t0: int, t1: int, filters: Filters, offset: int, limit: int) -> dict[str, Any]:
    """A page of the operations passing the filters, by start time (then tid)."""
    from app.traces.window import as_rows, operation_columns

    tids = selected_lanes(data, filters)
    selection = select_operations(data, [(tid, tid) for tid in tids], t0, t1, filters)
    total = len(selection)
    wanted = offset + limit
    if wanted < total:
        candidates = np.argpartition(selection.start, wanted - 1)[:wanted] if wanted else np.empty(0, dtype=np.intp)
    else:
        candidates = np.arange(total)
    order = candidates[np.lexsort((selection.slot[candidates], selection.start[candidates]))]
    page = order[offset : offset + limit]
    return {"total": total, "items": as_rows(operation_columns(data, selection, page))}
