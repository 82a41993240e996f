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

from typing import Any

import numpy as np
import numpy.typing as npt

from app.traces import lod
from app.traces.reader import TraceData
from app.traces.segment import KIND_CODE, NULL_INT, Int64s, Segment
from app.traces.store import KINDS
from app.traces.window import Filters, lane_roles, path_codes, select_operations, selected_lanes

PERCENTILES = (50, 95, 99)
N_KINDS = len(KINDS)


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
    """(upper bound, count) for power-of-two buckets 1, 2, 4, ... from the first non-empty bucket up to
    the one holding the maximum."""
    buckets = _histogram(np.bincount(exponents(values), minlength=EXPONENTS), "le")
    return [(bucket["le"], bucket["count"]) for bucket in buckets]


def exponents(values: Int64s) -> Int64s:
    """The power-of-two bucket of each value: 0 for <= 1, k for 2^(k-1) < v <= 2^k."""
    clipped = np.maximum(values, 1)
    found = np.ceil(np.log2(clipped)).astype(np.int64)
    return found + (clipped > (np.int64(1) << found)).astype(np.int64)  # float log2 of big ints may round down


EXPONENTS = 64


class _Tally:
    """Statistics summed one segment at a time, so a big window never gathers all its columns at once.

    Only the durations (for exact percentiles) are kept whole, one array per kind and per op.
    """

    def __init__(self, tids: list[int], t0: int, t1: int) -> None:
        self.lane_ids = np.array(tids, dtype=np.int64)
        self.t0, self.t1 = t0, t1
        n_lanes = len(tids)
        self.kind_count = np.zeros(N_KINDS, dtype=np.int64)
        self.kind_bytes = np.zeros(N_KINDS, dtype=np.int64)
        self.kind_durations: list[list[Int64s]] = [[] for _ in range(N_KINDS)]
        self.latency_buckets = np.zeros((N_KINDS, EXPONENTS), dtype=np.int64)
        self.size_buckets = np.zeros((N_KINDS, EXPONENTS), dtype=np.int64)
        self.ops: dict[str, int] = {}
        self.op_kind: dict[int, int] = {}
        self.op_bytes: dict[int, int] = {}
        self.op_durations: dict[int, list[Int64s]] = {}
        self.paths: dict[str, int] = {}
        self.path_totals: dict[str, Int64s] = {}
        self.lane_ops = np.zeros(n_lanes, dtype=np.int64)
        self.lane_bytes = np.zeros(n_lanes, dtype=np.int64)
        self.lane_busy = np.zeros(n_lanes)
        self.sequential = 0
        self.accesses = 0
        self.total_time = 0
        self.fsync_time = 0

    def add(self, segment: Segment, rows: npt.NDArray[np.intp] | npt.NDArray[np.bool_] | slice) -> None:
        kind = segment.kind[rows].astype(np.int64)
        if not len(kind):
            return
        duration = segment.duration[rows]
        size = segment.size[rows]
        moved = lod.io_bytes(segment.kind[rows], size)
        self.kind_count += np.bincount(kind, minlength=N_KINDS)
        self.kind_bytes += np.bincount(kind, weights=moved, minlength=N_KINDS).astype(np.int64)
        for code in np.flatnonzero(np.bincount(kind, minlength=N_KINDS)).tolist():
            self.kind_durations[code].append(duration[kind == code])
        self.latency_buckets += np.bincount(
            kind * EXPONENTS + exponents(duration), minlength=N_KINDS * EXPONENTS
        ).reshape(N_KINDS, EXPONENTS)
        sized = size != NULL_INT
        self.size_buckets += np.bincount(
            kind[sized] * EXPONENTS + exponents(size[sized]), minlength=N_KINDS * EXPONENTS
        ).reshape(N_KINDS, EXPONENTS)
        ops = _global_codes(segment.ops, self.ops, segment.op[rows])
        op_count = np.bincount(ops, minlength=len(self.ops))
        op_bytes = np.bincount(ops, weights=moved, minlength=len(self.ops))
        for code in np.flatnonzero(op_count).tolist():
            mine = ops == code
            self.op_kind.setdefault(code, int(kind[mine][0]))
            self.op_bytes[code] = self.op_bytes.get(code, 0) + int(op_bytes[code])
            self.op_durations.setdefault(code, []).append(duration[mine])
        self._add_files(segment, rows, kind, duration, moved)
        rank = np.searchsorted(self.lane_ids, segment.tid[rows])
        self.lane_ops += np.bincount(rank, minlength=len(self.lane_ids))
        self.lane_bytes += np.bincount(rank, weights=moved, minlength=len(self.lane_ids)).astype(np.int64)
        # Rows of a segment are sorted by (tid, start): the union per lane needs no sort. Unions of
        # different segments are added (segments cover consecutive stretches, so they hardly overlap).
        starts = np.maximum(segment.start[rows], self.t0)
        ends = np.maximum(np.minimum(segment.start[rows] + duration, self.t1), starts)
        slots, u_start, u_end = lod.union_intervals(rank.astype(np.int64), starts, ends)
        self.lane_busy += np.bincount(slots, weights=u_end - u_start, minlength=len(self.lane_ids))
        moves_data = (kind == KIND_CODE["read"]) | (kind == KIND_CODE["write"])
        accesses = (segment.offset[rows] != NULL_INT) & (segment.path[rows] >= 0) & moves_data
        self.accesses += int(accesses.sum())
        self.sequential += int((segment.sequential[rows] & accesses).sum())
        self.total_time += int(duration.sum())
        self.fsync_time += int(duration[kind == KIND_CODE["fsync"]].sum())

    def _add_files(
        self,
        segment: Segment,
        rows: npt.NDArray[np.intp] | npt.NDArray[np.bool_] | slice,
        kind: Int64s,
        duration: Int64s,
        moved: Int64s,
    ) -> None:
        paths = segment.path[rows]
        has_path = paths >= 0
        if not has_path.any():
            return
        local = paths[has_path].astype(np.int64)
        kinds = kind[has_path]
        n = len(segment.paths)
        counts = np.bincount(local * N_KINDS + kinds, minlength=n * N_KINDS).reshape(n, N_KINDS)
        read_bytes = np.bincount(local, weights=np.where(kinds == KIND_CODE["read"], moved[has_path], 0), minlength=n)
        written = np.bincount(local, weights=np.where(kinds == KIND_CODE["write"], moved[has_path], 0), minlength=n)
        busy = np.bincount(local, weights=duration[has_path], minlength=n)
        for code in np.flatnonzero(counts.sum(axis=1)).tolist():
            totals = self.path_totals.setdefault(segment.paths[code], np.zeros(N_KINDS + 3, dtype=np.int64))
            totals[:N_KINDS] += counts[code]
            totals[N_KINDS:] += (int(read_bytes[code]), int(written[code]), int(busy[code]))


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


def _histogram(counts: Int64s, bound: str) -> list[dict[str, int]]:
    nonzero = np.flatnonzero(counts)
    if not len(nonzero):
        return []
    return [{bound: 1 << e, "count": int(counts[e])} for e in range(int(nonzero[0]), int(nonzero[-1]) + 1)]


def read_stats(data: TraceData, *, t0: int, t1: int, filters: Filters) -> dict[str, Any]:
    tids = selected_lanes(data, filters)
    tally = _Tally(tids, t0, t1)
    for segment in data.segments:
        tally.add(segment, _rows_of(segment, tids, t0, t1, filters))
    duration_us = max(0, t1 - t0)
    seconds = duration_us / 1e6

    def throughput(count: int, moved: int, durations: list[Int64s]) -> dict[str, Any]:
        return {
            "count": count,
            "bytes": moved,
            "mb_per_s": round(moved / 1e6 / seconds, 3) if seconds > 0 else 0.0,
            "latency_us": _latency(np.concatenate(durations) if durations else np.empty(0, dtype=np.int64)),
        }

    by_kind, latency_histogram, size_histogram = [], [], []
    for code, kind in enumerate(KINDS):
        if not tally.kind_count[code]:
            continue
        by_kind.append(
            {
                "kind": kind,
                **throughput(int(tally.kind_count[code]), int(tally.kind_bytes[code]), tally.kind_durations[code]),
            }
        )
        latency_histogram.append({"kind": kind, "buckets": _histogram(tally.latency_buckets[code], "le_us")})
        if tally.size_buckets[code].any():
            size_histogram.append({"kind": kind, "buckets": _histogram(tally.size_buckets[code], "le_bytes")})
    op_names = list(tally.ops)
    by_op = [
        {
            "op": op_names[code],
            "kind": KINDS[tally.op_kind[code]],
            **throughput(sum(len(d) for d in durations), tally.op_bytes[code], durations),
        }
        for code, durations in tally.op_durations.items()
    ]
    by_op.sort(key=lambda row: (-row["count"], row["op"]))
    roles = lane_roles(data)
    threads = []
    for slot, tid in enumerate(tids):
        running = _cpu_running_us(data, tid, t0, t1)
        busy = min(float(tally.lane_busy[slot]), duration_us)
        threads.append(
            {
                "tid": tid,
                "role": roles.get(tid, {}).get("role", f"thread {tid}"),
                "busy_pct": round(100 * busy / duration_us, 3) if duration_us else 0.0,
                "cpu_pct": None if running is None or not duration_us else round(100 * running / duration_us, 3),
                "operations": int(tally.lane_ops[slot]),
                "bytes": int(tally.lane_bytes[slot]),
            }
        )
    read, write, fsync = KIND_CODE["read"], KIND_CODE["write"], KIND_CODE["fsync"]
    files: list[dict[str, Any]] = [
        {
            "path": path,
            "reads": int(totals[read]),
            "writes": int(totals[write]),
            "fsyncs": int(totals[fsync]),
            "bytes_read": int(totals[N_KINDS]),
            "bytes_written": int(totals[N_KINDS + 1]),
            "busy_us": int(totals[N_KINDS + 2]),
        }
        for path, totals in tally.path_totals.items()
    ]
    files.sort(key=lambda row: (-(row["bytes_read"] + row["bytes_written"]), -row["busy_us"], row["path"]))
    sequential, accesses = tally.sequential, tally.accesses
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
            "random_ops": accesses - sequential,
            "sequential_pct": round(100 * sequential / accesses, 3) if accesses else 0.0,
        },
        "fsync_time_pct": round(100 * tally.fsync_time / tally.total_time, 3) if tally.total_time else 0.0,
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
