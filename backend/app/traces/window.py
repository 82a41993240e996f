"""What the timeline draws for one view: per lane, buckets or raw operations; spans; decimated counters.

The window [t0, t1) is cut into ``n`` buckets of ``bucket_us = ceil((t1 - t0) / width_px)`` (so ``n`` <=
width_px; bucket i covers [t0 + i * bucket_us, t0 + (i + 1) * bucket_us), the last one ends at t1).
Per lane:
- at most ``width_px`` operations in the window: the operations themselves ("operations");
- else buckets ("buckets"), non-empty ones only: ``busy`` is the fraction of the bucket the lane spent
  inside an operation (union, so overlapping async operations count once; with a kind filter, the sum of
  those kinds' time, at most 1), ``kind`` the kind with the most time, ``count`` and ``bytes`` those of
  the operations starting in it. Lanes with few operations in the window are summed exactly; busier
  ones from the level-of-detail pyramid (see lod) for the pyramid buckets lying inside the window and
  exactly for the stretches at its two edges, so counts and bytes are exact and busy time is smeared
  by less than one window bucket.
Spans come as they are, at least one bucket wide, when there are at most ``width_px`` of them on a lane
track; else merged per bucket (the label with the most time) and joined when neighbours agree.
Counters: every sample when there are at most 2 * width_px in the window, else the minimum and maximum
of each bucket, in time order.
"""

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from app.traces import lod
from app.traces.reader import Spans, TraceData
from app.traces.segment import NULL_INT, Int64s, Segment
from app.traces.store import KINDS

# A lane with at most this many operations per pixel in the window is summed from its operations;
# busier lanes from the pyramid (when it has a level fine enough).
EXACT_OPS_PER_PIXEL: Final = 2
# A lane track with more spans than width_px / this in the window gets them merged per bucket.
SPANS_PER_PIXEL_DIVISOR: Final = 8


@dataclass(frozen=True)
class Filters:
    tids: frozenset[int] | None = None
    kinds: frozenset[str] | None = None
    roles: frozenset[str] | None = None
    path: str | None = None

    def kind_mask(self) -> npt.NDArray[np.bool_] | None:
        if self.kinds is None:
            return None
        return np.array([kind in self.kinds for kind in KINDS], dtype=np.bool_)


@dataclass
class Selection:
    """Operations of some lanes that overlap a window, gathered across segments, sorted by (slot, start)."""

    slot: Int64s
    start: Int64s
    end: Int64s
    kind: npt.NDArray[np.int8]
    segment: npt.NDArray[np.intp]
    row: npt.NDArray[np.intp]

    def __len__(self) -> int:
        return len(self.start)

    def subset(self, keep: npt.NDArray[np.bool_]) -> "Selection":
        return Selection(
            self.slot[keep], self.start[keep], self.end[keep], self.kind[keep], self.segment[keep], self.row[keep]
        )


def lane_roles(data: TraceData) -> dict[int, dict[str, Any]]:
    """Every lane the trace knows: named by a producer, or seen in operations ("thread N" / "pid N")."""
    default_role = "pid" if data.summary.meta.get("format") == "juicefs" else "thread"
    lanes: dict[int, dict[str, Any]] = {}
    for segment in data.segments:
        for tid in segment.lanes:
            lanes.setdefault(tid, {"tid": tid, "role": f"{default_role} {tid}"})
    for tid in data.summary.lane_totals:
        lanes.setdefault(tid, {"tid": tid, "role": f"{default_role} {tid}"})
    for tid, _ in data.spans.groups:
        lanes.setdefault(tid, {"tid": tid, "role": f"{default_role} {tid}"})
    for lane in data.summary.lanes:
        lanes[int(lane["tid"])] = dict(lane)
    return dict(sorted(lanes.items()))


def selected_lanes(data: TraceData, filters: Filters) -> list[int]:
    lanes = lane_roles(data)
    return [
        tid
        for tid, lane in lanes.items()
        if (filters.tids is None or tid in filters.tids) and (filters.roles is None or lane["role"] in filters.roles)
    ]


def path_codes(segment: Segment, needle: str | None) -> npt.NDArray[np.int32] | None:
    if needle is None:
        return None
    return np.array([code for code, path in enumerate(segment.paths) if needle in path], dtype=np.int32)


def select_operations(
    data: TraceData,
    lanes: list[tuple[int, int]],
    t0: int,
    t1: int,
    filters: Filters,
    segments: list[int] | None = None,
) -> Selection:
    """Operations of ``lanes`` ((tid, slot) pairs) overlapping [t0, t1) that pass the filters, sorted by
    (slot, start); from the given segments only, if given."""
    kind_mask = filters.kind_mask()
    parts: list[tuple[Int64s, Int64s, Int64s, npt.NDArray[np.int8], npt.NDArray[np.intp], npt.NDArray[np.intp]]] = []
    for number, segment in enumerate(data.segments):
        if (segments is not None and number not in segments) or not segment.overlaps(t0, t1):
            continue
        ranges, slots = [], []
        for tid, slot in lanes:
            lo, hi = segment.window_rows(tid, t0, t1)
            if lo < hi:
                ranges.append(np.arange(lo, hi))
                slots.append(np.full(hi - lo, slot, dtype=np.int64))
        if not ranges:
            continue
        rows = np.concatenate(ranges)
        slot_of_row = np.concatenate(slots)
        start = segment.start[rows]
        end = start + segment.duration[rows]
        kind = segment.kind[rows]
        keep = (end > t0) | (start >= t0)
        if kind_mask is not None:
            keep &= kind_mask[kind]
        wanted_paths = path_codes(segment, filters.path)
        if wanted_paths is not None:
            keep &= np.isin(segment.path[rows], wanted_paths)
        parts.append(
            (slot_of_row[keep], start[keep], end[keep], kind[keep], np.full(int(keep.sum()), number), rows[keep])
        )
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return Selection(empty, empty, empty, empty.astype(np.int8), empty.astype(np.intp), empty.astype(np.intp))
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)]
    order = np.lexsort((columns[1], columns[0])) if len(data.segments) > 1 else np.arange(len(columns[1]))
    return Selection(*(column[order] for column in columns))


Columns = dict[str, list[Any]]
KIND_NAMES = np.array(KINDS, dtype=object)
OPERATION_FIELDS = ("tid", "start_us", "duration_us", "op", "kind", "path", "offset", "size", "result")
BUCKET_FIELDS = ("i", "busy", "kind", "count", "bytes")
SPAN_FIELDS = ("start_us", "duration_us", "track", "label")


def as_rows(columns: Columns) -> list[dict[str, Any]]:
    """{field: [values]} -> [{field: value}], with a dict display per known shape (several times faster
    than dict(zip(...)) for the hundred thousand buckets of a zoomed-out window)."""
    fields = tuple(columns)
    values = columns.values()
    if fields == BUCKET_FIELDS:
        return [{"i": a, "busy": b, "kind": c, "count": d, "bytes": e} for a, b, c, d, e in zip(*values, strict=True)]
    if fields == SPAN_FIELDS:
        return [{"start_us": a, "duration_us": b, "track": c, "label": d} for a, b, c, d in zip(*values, strict=True)]
    if fields == OPERATION_FIELDS[1:]:
        return [
            {"start_us": a, "duration_us": b, "op": c, "kind": d, "path": e, "offset": f, "size": g, "result": h}
            for a, b, c, d, e, f, g, h in zip(*values, strict=True)
        ]
    return [dict(zip(fields, row, strict=True)) for row in zip(*values, strict=True)]


def operation_columns(data: TraceData, selection: Selection, picked: npt.NDArray[np.intp]) -> Columns:
    """The picked operations of a selection, by start time then tid, as the API shows them."""
    parts: list[list[npt.NDArray[Any]]] = []
    segment_of = selection.segment[picked]
    for number in range(len(data.segments)) if len(data.segments) > 1 else [0]:
        rows = selection.row[picked[segment_of == number]] if len(data.segments) > 1 else selection.row[picked]
        if not len(rows):
            continue
        segment = data.segments[number]
        parts.append(
            [
                segment.tid[rows],
                segment.start[rows],
                segment.duration[rows],
                segment.op_names[segment.op[rows]],
                KIND_NAMES[segment.kind[rows]],
                segment.path_names[segment.path[rows]],
                _or_none(segment.offset[rows]),
                _or_none(segment.size[rows]),
                segment.result_names[segment.result[rows]],
            ]
        )
    if not parts:
        return {name: [] for name in OPERATION_FIELDS}
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)] if len(parts) > 1 else parts[0]
    order = np.lexsort((columns[0], columns[1]))  # by start, then tid
    return {name: column[order].tolist() for name, column in zip(OPERATION_FIELDS, columns, strict=True)}


def _or_none(values: Int64s) -> npt.NDArray[np.object_]:
    out = values.astype(object)
    out[values == NULL_INT] = None
    return out


def _bucket_columns(dense: lod.Dense, slot: int, bucket_widths: npt.NDArray[np.float64]) -> Columns:
    busy = np.round(np.minimum(dense.busy_us[slot] / bucket_widths, 1.0), 4)
    # Kind times carry a tiny weight per operation (lod.ZERO_TIME_WEIGHT): zero-length ones count too.
    dominant = dense.kind_us[slot].argmax(axis=1)
    nonempty = np.flatnonzero((dense.count[slot] > 0) | (dense.busy_us[slot] > 0))
    return {
        "i": nonempty.tolist(),
        "busy": busy[nonempty].tolist(),
        "kind": [KINDS[k] for k in dominant[nonempty].tolist()],
        "count": dense.count[slot][nonempty].tolist(),
        "bytes": dense.bytes[slot][nonempty].tolist(),
    }


def _span_columns(spans: Spans, tid: int, t0: int, t1: int, bucket_us: int, width_px: int) -> Columns:
    out: Columns = {name: [] for name in SPAN_FIELDS}
    for track_code, track in enumerate(spans.tracks):
        begin, end = spans.groups.get((tid, track_code), (0, 0))
        if begin == end:
            continue
        lo = begin + int(np.searchsorted(spans.end_max[begin:end], t0, side="right"))
        hi = begin + int(np.searchsorted(spans.start[begin:end], t1, side="left"))
        if lo >= hi:
            continue
        start, duration, label = spans.start[lo:hi], spans.duration[lo:hi], spans.label[lo:hi]
        keep = start + duration > t0
        start, duration, label = start[keep], duration[keep], label[keep]
        if len(start) > max(1, width_px // SPANS_PER_PIXEL_DIVISOR):
            start, duration, label = _merge_spans(start, duration, label, t0, t1, bucket_us, len(spans.labels))
        else:
            duration = np.maximum(duration, bucket_us)  # at least one bucket wide, so it can be seen
        out["start_us"] += start.tolist()
        out["duration_us"] += duration.tolist()
        out["track"] += [track] * len(start)
        out["label"] += [spans.labels[c] for c in label.tolist()]
    return out


def _merge_spans(
    start: Int64s, duration: Int64s, label: npt.NDArray[np.int32], t0: int, t1: int, bucket_us: int, labels: int
) -> tuple[Int64s, Int64s, npt.NDArray[np.int32]]:
    """One span per run of buckets where the same label had the most time."""
    n_buckets = math.ceil((t1 - t0) / bucket_us)
    labels = max(1, labels)
    pieces = lod.cut(start, start + duration, t0, bucket_us, t0, t1)
    time = np.bincount(
        pieces.bucket * labels + label[pieces.row], weights=pieces.length, minlength=n_buckets * labels
    ).reshape(n_buckets, labels)
    covered = np.bincount(pieces.bucket, minlength=n_buckets) > 0
    winner = np.where(covered, time.argmax(axis=1), -1)
    change = np.flatnonzero(np.concatenate(([True], winner[1:] != winner[:-1])))
    run_end = np.concatenate((change[1:], [n_buckets]))
    keep = winner[change] >= 0
    run_start_us = t0 + change[keep] * bucket_us
    run_end_us = np.minimum(t1, t0 + run_end[keep] * bucket_us)
    return run_start_us, run_end_us - run_start_us, winner[change[keep]].astype(np.int32)


def decimate(
    times: Int64s, values: npt.NDArray[np.float64], t0: int, t1: int, bucket_us: int, width_px: int
) -> list[list[float]]:
    lo = int(np.searchsorted(times, t0, side="left"))
    hi = int(np.searchsorted(times, t1, side="left"))
    t, v = times[lo:hi], values[lo:hi]
    if len(t) <= 2 * width_px:
        return [[a, b] for a, b in zip(t.tolist(), v.tolist(), strict=True)]
    bucket = (t - t0) // bucket_us
    order = np.lexsort((v, bucket))  # within each bucket: ascending value
    sorted_bucket = bucket[order]
    first = np.flatnonzero(np.concatenate(([True], sorted_bucket[1:] != sorted_bucket[:-1])))
    last = np.concatenate((first[1:] - 1, [len(order) - 1]))
    lowest, highest = order[first], order[last]
    picked = np.unique(np.concatenate((lowest, highest)))  # time order, one point when min and max coincide
    return [[a, b] for a, b in zip(t[picked].tolist(), v[picked].tolist(), strict=True)]


def _sum_exactly(
    data: TraceData,
    parts: list[tuple[Selection, Int64s, Int64s, npt.NDArray[np.bool_]]],
    *,
    n_slots: int,
    origin: int,
    width: int,
    n_buckets: int,
) -> lod.Dense:
    slot, start, end, kind, nbytes, countable = [], [], [], [], [], []
    for selection, lo, hi, counts in parts:
        slot.append(selection.slot)
        start.append(np.maximum(selection.start, lo))
        end.append(np.maximum(np.minimum(selection.end, hi), np.maximum(selection.start, lo)))
        kind.append(selection.kind)
        nbytes.append(selection_bytes(data, selection))
        countable.append(counts)
    columns = [np.concatenate(column) for column in (slot, start, end, kind, nbytes, countable)]
    if sum(1 for part in parts if len(part[0])) > 1:  # one selection is sorted by (slot, start) already
        order = np.lexsort((columns[1], columns[0]))
        columns = [column[order] for column in columns]
    return lod.dense_buckets(
        *columns[:5],
        countable=columns[5],
        n_slots=n_slots,
        origin=origin,
        width=width,
        n_buckets=n_buckets,
    )


def selection_bytes(data: TraceData, selection: Selection) -> Int64s:
    if len(data.segments) == 1:
        only = data.segments[0]
        return lod.io_bytes(only.kind[selection.row], only.size[selection.row])
    nbytes = np.zeros(len(selection), dtype=np.int64)
    for number in range(len(data.segments)):
        mine = selection.segment == number
        segment = data.segments[number]
        rows = selection.row[mine]
        nbytes[mine] = lod.io_bytes(segment.kind[rows], segment.size[rows])
    return nbytes


def read_window(
    data: TraceData, *, t0: int, t1: int, width_px: int, filters: Filters, columns: bool = False
) -> dict[str, Any]:
    """The window as the API returns it; ``columns`` gives each lane's buckets, operations and spans as
    {field: [values]} instead of [{field: value}] (same data, far less to build and encode)."""
    bucket_us = max(1, math.ceil((t1 - t0) / width_px))
    n_buckets = math.ceil((t1 - t0) / bucket_us)
    tids = selected_lanes(data, filters)
    slots = {tid: slot for slot, tid in enumerate(tids)}
    # How many operations each lane may have in the window (an upper bound: rows overlapping by end_max).
    estimate = dict.fromkeys(tids, 0)
    for segment in data.segments:
        if segment.overlaps(t0, t1):
            for tid in tids:
                lo, hi = segment.window_rows(tid, t0, t1)
                estimate[tid] += hi - lo
    levels = [lod.pick_level(pyramid, bucket_us) for pyramid in data.pyramids]
    pyramid_usable = filters.path is None and all(
        level is not None
        for level, covered in zip(levels, data.pyramid_segments, strict=True)
        if any(len(data.segments[number]) for number in covered)
    )
    from_pyramid = [tid for tid in tids if pyramid_usable and estimate[tid] > EXACT_OPS_PER_PIXEL * width_px]
    exact = [tid for tid in tids if tid not in set(from_pyramid) and estimate[tid] > 0]
    dense = lod.Dense.zeros(len(tids), n_buckets)
    pyramid_lanes = [(tid, slots[tid]) for tid in from_pyramid]
    # Operations summed exactly: those of quiet lanes, and those of busy lanes near the window's edges,
    # where the pyramid's buckets stick out of the window. Each comes with the stretch of time it is
    # clipped to and whether it counts (it does where it starts, or in bucket 0 when before t0).
    exact_parts: list[tuple[Selection, Int64s, Int64s, npt.NDArray[np.bool_]]] = []
    selection = select_operations(data, [(tid, slots[tid]) for tid in exact], t0, t1, filters)
    per_slot = np.bincount(selection.slot, minlength=len(tids))
    raw_slots = {slots[tid] for tid in exact if per_slot[slots[tid]] <= width_px}
    summed = selection.subset(~np.isin(selection.slot, np.array(sorted(raw_slots), dtype=np.int64)))
    exact_parts.append((summed, np.full(len(summed), t0), np.full(len(summed), t1), np.ones(len(summed), bool)))
    for level, covered in zip(levels, data.pyramid_segments, strict=True):
        if level is None or not pyramid_lanes:
            continue
        inner_lo = -(-t0 // level.width) * level.width
        inner_hi = max(inner_lo, t1 // level.width * level.width)
        lod.level_into(
            level,
            pyramid_lanes,
            dense,
            origin=t0,
            width=bucket_us,
            n_buckets=n_buckets,
            kinds=filters.kind_mask(),
            buckets=(inner_lo // level.width, inner_hi // level.width),
        )
        for lo, hi in ((t0, min(inner_lo, t1)), (max(inner_hi, t0), t1)):
            if lo >= hi or (inner_lo == inner_hi and lo > t0):
                continue
            edge = select_operations(data, pyramid_lanes, lo, hi, filters, segments=covered)
            countable = (edge.start >= lo) | (lo == t0)
            exact_parts.append((edge, np.full(len(edge), lo), np.full(len(edge), hi), countable))
    if any(len(part[0]) for part in exact_parts):
        exact_dense = _sum_exactly(
            data, exact_parts, n_slots=len(tids), origin=t0, width=bucket_us, n_buckets=n_buckets
        )
        for name in ("busy_us", "count", "bytes", "kind_us", "kind_count"):
            getattr(dense, name)[...] += getattr(exact_dense, name)
    bucket_edges = np.minimum(t0 + np.arange(1, n_buckets + 1) * bucket_us, t1)
    bucket_widths = (bucket_edges - (t0 + np.arange(n_buckets) * bucket_us)).astype(np.float64)
    no_buckets: Columns = {name: [] for name in BUCKET_FIELDS}
    no_operations: Columns = {name: [] for name in OPERATION_FIELDS if name != "tid"}
    lanes_out = []
    for tid in tids:
        slot = slots[tid]
        lane: dict[str, Any] = {"tid": tid}
        if slot in raw_slots or estimate[tid] == 0:
            operations = operation_columns(data, selection, np.flatnonzero(selection.slot == slot))
            del operations["tid"]
            lane.update(detail="operations", buckets=no_buckets, operations=operations)
        else:
            lane.update(detail="buckets", buckets=_bucket_columns(dense, slot, bucket_widths), operations=no_operations)
        lane["spans"] = _span_columns(data.spans, tid, t0, t1, bucket_us, width_px)
        if not columns:
            for name in ("buckets", "operations", "spans"):
                lane[name] = as_rows(lane[name])
        lanes_out.append(lane)
    counters = [
        {
            "track": track,
            "unit": data.counters.units.get(track, ""),
            "points": decimate(times, values, t0, t1, bucket_us, width_px),
        }
        for track, (times, values) in data.counters.series.items()
    ]
    return {"t0_us": t0, "t1_us": t1, "bucket_us": bucket_us, "lanes": lanes_out, "counters": counters}
