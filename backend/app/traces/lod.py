"""Level of detail: operations summed into time buckets per lane.

Two uses of one piece of arithmetic:
- ``dense_buckets`` sums the operations of a window into the window's own buckets, exactly: an operation
  crossing bucket edges gives each bucket the part of its time inside it; "busy" is the union of the
  lane's operations (overlapping async operations are not counted twice).
- the pyramid (``build_pyramid``: a list of ``Level``) holds the same sums precomputed at fixed widths
  4^k us (aligned to the epoch), built once per segment, so a zoomed-out window adds up a few thousand
  rows per lane instead of millions of operations. Its buckets do not line up with the window's:
  ``level_into`` takes the level buckets lying wholly inside the window and splits each one's busy time
  between the (at most two) window buckets it overlaps, in proportion; the caller sums the operations
  of the two edge stretches exactly. Counts and bytes are then exact, and time is smeared by at most one
  level bucket, which is never wider than a window bucket.

Count and bytes belong to the bucket an operation starts in (the first bucket of the window for one that
started before it), so they add up across levels and buckets. Bytes are the sizes of reads and writes.
"""

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from app.traces.segment import KIND_CODE, NULL_INT, Int64s, Segment, lane_ranges
from app.traces.store import KINDS

Floats = npt.NDArray[np.float64]
LEVEL_FACTOR: Final = 4
N_KINDS: Final = len(KINDS)
# The finest level is chosen so that its non-empty buckets hold about this many operations on average:
# a pyramid of about 1/OPS_PER_FINE_BUCKET rows per operation.
OPS_PER_FINE_BUCKET: Final = 4
MAX_LEVEL: Final = 24  # 4^24 us is 8.9 years
ZERO_TIME_WEIGHT: Final = 1e-3


@dataclass
class Pieces:
    """Each operation cut at bucket edges: which operation, which bucket, how long inside it."""

    row: npt.NDArray[np.intp]
    bucket: Int64s
    length: Int64s
    first: npt.NDArray[np.bool_]  # the piece where the operation's count and bytes go


def cut(starts: Int64s, ends: Int64s, origin: int, width: int, lo: int, hi: int) -> Pieces:
    """Cut [start, end) at multiples of ``width`` from ``origin``, keeping only what is inside [lo, hi).

    A zero-length operation is one piece of length 0 in the bucket where it starts. Pieces come in row
    order; most operations fit in one bucket, so only the others go through the slower repeat.
    """
    s = np.maximum(starts, lo)
    e = np.minimum(ends, hi)
    b0 = (s - origin) // width
    b1 = np.maximum((e - 1 - origin) // width, b0)
    spans = b1 - b0 + 1
    if not len(spans) or int(spans.max()) == 1:
        rows = np.arange(len(starts))
        return Pieces(rows, b0, np.maximum(e - s, 0), np.ones(len(starts), dtype=np.bool_))
    row = np.repeat(np.arange(len(starts)), spans)
    first_of_row = np.cumsum(spans) - spans
    bucket = b0[row] + (np.arange(len(row)) - first_of_row[row])
    piece_start = np.maximum(s[row], origin + bucket * width)
    piece_end = np.minimum(e[row], origin + (bucket + 1) * width)
    first = np.zeros(len(row), dtype=np.bool_)
    first[first_of_row] = True
    return Pieces(row, bucket, np.maximum(piece_end - piece_start, 0), first)


def _kind_weights(pieces: Pieces) -> Floats:
    """Time per piece, plus a thousandth of a microsecond per operation: a bucket of zero-length operations
    still gets the kind it has most of, and that tiny weight never outvotes real time."""
    weights: Floats = pieces.length.astype(np.float64) + np.where(pieces.first, ZERO_TIME_WEIGHT, 0.0)
    return weights


def union_intervals(slots: Int64s, starts: Int64s, ends: Int64s) -> tuple[Int64s, Int64s, Int64s]:
    """Merge overlapping intervals per slot; input sorted by (slot, start). Returns (slot, start, end)."""
    if not len(starts):
        return slots[:0], starts[:0], ends[:0]
    # Shifting each slot's times past the previous slot's keeps one running maximum from crossing slots.
    base = int(starts.min())
    shift = int(np.max(ends) - base + 1)
    key_slots = slots - int(slots.min())
    shifted_ends = ends - base + key_slots * shift
    running = np.maximum.accumulate(shifted_ends)
    shifted_starts = starts - base + key_slots * shift
    begins = np.concatenate(([True], shifted_starts[1:] > running[:-1]))
    first = np.flatnonzero(begins)
    last = np.concatenate((first[1:] - 1, [len(starts) - 1]))
    merged_end = running[last] - key_slots[first] * shift + base
    return slots[first], starts[first], merged_end


@dataclass
class Dense:
    """Sums per (slot, bucket) of one window: arrays shaped (slots, buckets[, kinds])."""

    busy_us: Floats
    count: Int64s
    bytes: Int64s
    kind_us: Floats
    kind_count: Int64s

    @classmethod
    def zeros(cls, slots: int, buckets: int) -> "Dense":
        return cls(
            np.zeros((slots, buckets)),
            np.zeros((slots, buckets), dtype=np.int64),
            np.zeros((slots, buckets), dtype=np.int64),
            np.zeros((slots, buckets, N_KINDS)),
            np.zeros((slots, buckets, N_KINDS), dtype=np.int64),
        )


def io_bytes(kinds: npt.NDArray[np.int8], sizes: Int64s) -> Int64s:
    moves_data = (kinds == KIND_CODE["read"]) | (kinds == KIND_CODE["write"])
    return np.where(moves_data & (sizes != NULL_INT), sizes, 0)


def dense_buckets(
    slots: Int64s,
    starts: Int64s,
    ends: Int64s,
    kinds: npt.NDArray[np.int8],
    nbytes: Int64s,
    *,
    n_slots: int,
    origin: int,
    width: int,
    n_buckets: int,
    countable: npt.NDArray[np.bool_] | None = None,
) -> Dense:
    """Exact sums of operations (sorted by slot, then start) into ``n_buckets`` of ``width`` from ``origin``.

    Operations whose ``countable`` is False add their time but not their count and bytes (they were
    counted elsewhere)."""
    hi = origin + width * n_buckets
    out = Dense.zeros(n_slots, n_buckets)
    if not len(starts):
        return out
    size = n_slots * n_buckets
    pieces = cut(starts, ends, origin, width, origin, hi)
    key = slots[pieces.row] * n_buckets + pieces.bucket
    counted = pieces.first if countable is None else pieces.first & countable[pieces.row]
    first_key = key[counted]
    first_rows = pieces.row[counted]
    out.count = np.bincount(first_key, minlength=size).reshape(n_slots, n_buckets).astype(np.int64)
    out.bytes = (
        np.bincount(first_key, weights=nbytes[first_rows], minlength=size).reshape(n_slots, n_buckets).astype(np.int64)
    )
    kind_key = key * N_KINDS + kinds[pieces.row]
    kind_us = np.bincount(kind_key, weights=_kind_weights(pieces), minlength=size * N_KINDS)
    out.kind_us = kind_us.astype(np.float64).reshape(n_slots, n_buckets, N_KINDS)
    out.kind_count = (
        np.bincount(kind_key[counted], minlength=size * N_KINDS).reshape(n_slots, n_buckets, N_KINDS)
    ).astype(np.int64)
    u_slot, u_start, u_end = union_intervals(slots, starts, ends)
    union = cut(u_start, u_end, origin, width, origin, hi)
    union_key = u_slot[union.row] * n_buckets + union.bucket
    busy = np.bincount(union_key, weights=union.length.astype(np.float64), minlength=size)
    out.busy_us = busy.astype(np.float64).reshape(n_slots, n_buckets)
    return out


@dataclass
class Level:
    """One pyramid level: sums over buckets [b * width, (b + 1) * width) per lane, non-empty ones only,
    rows sorted by (tid, bucket)."""

    width: int
    tid: Int64s
    bucket: Int64s
    busy_us: Floats
    count: Int64s
    bytes: Int64s
    kind_us: npt.NDArray[np.float32]  # (rows, kinds)
    kind_count: npt.NDArray[np.int32]  # (rows, kinds)

    def __len__(self) -> int:
        return len(self.bucket)

    @property
    def lanes(self) -> dict[int, tuple[int, int]]:
        if self._lanes is None:
            self._lanes = lane_ranges(self.tid)
        return self._lanes

    _lanes: dict[int, tuple[int, int]] | None = None
    _keys: tuple[Int64s, Int64s, int, int] | None = None

    def search_keys(self) -> tuple[Int64s, Int64s, int, int]:
        """One sorted key per row, ``lane rank * span + bucket - base``; the lanes' tids by rank; base; span.
        Built once per level (levels are cached with their trace)."""
        if self._keys is None:
            base = int(self.bucket.min())
            span = int(self.bucket.max()) - base + 2
            lane_tids = np.unique(self.tid)
            rank = np.searchsorted(lane_tids, self.tid).astype(np.int64)
            self._keys = (rank * span + (self.bucket - base), lane_tids, base, span)
        return self._keys


_FAR: Final = 1 << 62


def finest_level(segment: Segment) -> int:
    """The k of the finest level: its buckets hold ~OPS_PER_FINE_BUCKET operations of a busy lane."""
    if len(segment) == 0:
        return MAX_LEVEL
    return finest_level_for(
        len(segment), len(segment.lanes), segment.t_max - segment.t_min, int(segment.duration.sum())
    )


def finest_level_for(operations: int, lanes: int, span_us: int, total_duration_us: int) -> int:
    if operations == 0:
        return MAX_LEVEL
    gap = max(1, span_us) * max(1, lanes) / operations  # mean time between operation starts in a lane
    k = 0
    while k < MAX_LEVEL and LEVEL_FACTOR**k < OPS_PER_FINE_BUCKET * gap:
        k += 1
    # Long operations are cut into many fine buckets: keep that to a few pieces per operation.
    while k < MAX_LEVEL and total_duration_us // LEVEL_FACTOR**k > 4 * operations:
        k += 1
    return k


def build_level(segment: Segment, k: int) -> Level:
    """Level k straight from the operations."""
    width = LEVEL_FACTOR**k
    lane_tids = np.array(sorted(segment.lanes), dtype=np.int64)
    first_bucket = segment.t_min // width
    span = segment.t_max // width - first_bucket + 1

    def keys(tids: Int64s, buckets: Int64s) -> Int64s:
        ranks: Int64s = np.searchsorted(lane_tids, tids).astype(np.int64)
        combined: Int64s = ranks * span + (buckets - first_bucket)
        return combined

    pieces = cut(segment.start, segment.end, 0, width, -_FAR, _FAR)
    unique_keys, group = np.unique(keys(segment.tid[pieces.row], pieces.bucket), return_inverse=True)
    n = len(unique_keys)
    kinds = segment.kind[pieces.row].astype(np.int64)
    first = pieces.first
    kind_us = np.bincount(group * N_KINDS + kinds, weights=_kind_weights(pieces), minlength=n * N_KINDS)
    kind_count = np.bincount(group[first] * N_KINDS + kinds[first], minlength=n * N_KINDS)
    nbytes = io_bytes(segment.kind, segment.size)
    bytes_ = np.bincount(group[first], weights=nbytes[pieces.row[first]], minlength=n)
    u_tid, u_start, u_end = union_intervals(segment.tid, segment.start, segment.end)
    union = cut(u_start, u_end, 0, width, -_FAR, _FAR)
    where = np.searchsorted(unique_keys, keys(u_tid[union.row], union.bucket))
    busy = np.bincount(where, weights=union.length.astype(np.float64), minlength=n).astype(np.float64)
    kind_count = kind_count.reshape(n, N_KINDS)
    return Level(
        width=width,
        tid=lane_tids[unique_keys // span],
        bucket=unique_keys % span + first_bucket,
        busy_us=busy,
        count=kind_count.sum(axis=1).astype(np.int64),
        bytes=bytes_.astype(np.int64),
        kind_us=kind_us.reshape(n, N_KINDS).astype(np.float32),
        kind_count=kind_count.astype(np.int32),
    )


def coarser(level: Level) -> Level:
    """The next level up, summed from this one (bucket edges nest: 4 buckets make one)."""
    buckets = level.bucket // LEVEL_FACTOR
    change = np.concatenate(([True], (buckets[1:] != buckets[:-1]) | (level.tid[1:] != level.tid[:-1])))
    starts = np.flatnonzero(change)
    return Level(
        width=level.width * LEVEL_FACTOR,
        tid=level.tid[starts],
        bucket=buckets[starts],
        busy_us=np.add.reduceat(level.busy_us, starts),
        count=np.add.reduceat(level.count, starts),
        bytes=np.add.reduceat(level.bytes, starts),
        kind_us=np.add.reduceat(level.kind_us, starts, axis=0).astype(np.float32),
        kind_count=np.add.reduceat(level.kind_count, starts, axis=0).astype(np.int32),
    )


def build_pyramid(segment: Segment) -> list[Level]:
    """Levels from the finest worth keeping up to one bucket per lane."""
    if len(segment) == 0:
        return []
    return pyramid_from(build_level(segment, finest_level(segment)))


def pyramid_from(finest: Level) -> list[Level]:
    levels = [finest]
    lanes = len(np.unique(finest.tid))
    while len(levels[-1]) > lanes and len(levels) < MAX_LEVEL:
        levels.append(coarser(levels[-1]))
    return levels


def merge_levels(levels: list[Level]) -> Level:
    """Levels of one width from consecutive segments as one: rows of the same (tid, bucket) (where two
    segments meet) are summed, busy time capped at the bucket's width."""
    tid = np.concatenate([level.tid for level in levels])
    bucket = np.concatenate([level.bucket for level in levels])
    order = np.lexsort((bucket, tid))
    tid, bucket = tid[order], bucket[order]
    starts = np.flatnonzero(np.concatenate(([True], (tid[1:] != tid[:-1]) | (bucket[1:] != bucket[:-1]))))
    width = levels[0].width

    def summed(name: str) -> npt.NDArray[Any]:
        column = np.concatenate([getattr(level, name) for level in levels])[order]
        return np.add.reduceat(column, starts, axis=0) if len(column) else column

    return Level(
        width=width,
        tid=tid[starts],
        bucket=bucket[starts],
        busy_us=np.minimum(summed("busy_us"), width).astype(np.float64),
        count=summed("count").astype(np.int64),
        bytes=summed("bytes").astype(np.int64),
        kind_us=summed("kind_us").astype(np.float32),
        kind_count=summed("kind_count").astype(np.int32),
    )


def pick_level(levels: list[Level], bucket_us: int) -> Level | None:
    """The finest level whose buckets are no wider than the window's."""
    fitting = [level for level in levels if level.width <= bucket_us]
    return fitting[-1] if fitting else None


def level_into(
    level: Level,
    lanes: list[tuple[int, int]],
    out: Dense,
    *,
    origin: int,
    width: int,
    n_buckets: int,
    kinds: npt.NDArray[np.bool_] | None,
    buckets: tuple[int, int],
) -> None:
    """Add the level buckets [first, last) of ``lanes`` ((tid, slot) pairs) into ``out``; they lie inside
    the window (the caller sums the operations of the window's edges exactly).

    Each level bucket's time is split between the (at most two) window buckets it overlaps, in
    proportion; its count and bytes go whole to the window bucket where it starts.
    """
    first_bucket, end_bucket = buckets
    if first_bucket >= end_bucket or not len(level):
        return
    # All lanes' row ranges with two searchsorted calls on a (lane, bucket) key, not a loop per lane.
    keys, lane_of, base, span = level.search_keys()
    tids = np.array([tid for tid, _ in lanes], dtype=np.int64)
    wanted_slots = np.array([slot for _, slot in lanes], dtype=np.int64)
    rank = np.searchsorted(lane_of, tids)
    known = (rank < len(lane_of)) & (lane_of[np.minimum(rank, len(lane_of) - 1)] == tids)
    rank, wanted_slots = rank[known], wanted_slots[known]
    lo = np.searchsorted(keys, rank * span + np.clip(first_bucket - base, 0, span), side="left")
    up = np.searchsorted(keys, rank * span + np.clip(end_bucket - base, 0, span), side="left")
    lengths = np.maximum(up - lo, 0)
    if not lengths.sum():
        return
    rows = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    slot_of_row = np.repeat(wanted_slots, lengths)
    b_start = level.bucket[rows] * level.width
    b_end = b_start + level.width
    i0 = (b_start - origin) // width
    i1 = np.minimum((b_end - 1 - origin) // width, n_buckets - 1)
    edge = np.minimum(origin + (i0 + 1) * width, b_end)
    # Summed per window bucket with one bincount per column. Counts, bytes and kind times go to the
    # window bucket where the level bucket starts; busy time is split between the two it overlaps.
    size = out.count.size
    k0 = slot_of_row * n_buckets + i0
    flat_kind_us = out.kind_us.reshape(-1, N_KINDS)
    if kinds is None:
        busy = level.busy_us[rows]
        count: Floats = level.count[rows].astype(np.float64)
        nbytes: Floats = level.bytes[rows].astype(np.float64)
        for kind in range(N_KINDS):
            flat_kind_us[:, kind] += np.bincount(k0, weights=level.kind_us[rows, kind], minlength=size)
    else:
        busy = np.zeros(len(rows))
        count = np.zeros(len(rows))
        flat_kind_count = out.kind_count.reshape(-1, N_KINDS)
        for kind in np.flatnonzero(kinds).tolist():
            time_of_kind = level.kind_us[rows, kind].astype(np.float64)
            count_of_kind = level.kind_count[rows, kind].astype(np.float64)
            busy += time_of_kind
            count += count_of_kind
            flat_kind_us[:, kind] += np.bincount(k0, weights=time_of_kind, minlength=size)
            flat_kind_count[:, kind] += np.rint(np.bincount(k0, weights=count_of_kind, minlength=size)).astype(np.int64)
        moves_data = kinds[KIND_CODE["read"]] or kinds[KIND_CODE["write"]]
        nbytes = level.bytes[rows].astype(np.float64) if moves_data else np.zeros(len(rows))
    out.count.reshape(-1)[...] += np.rint(np.bincount(k0, weights=count, minlength=size)).astype(np.int64)
    out.bytes.reshape(-1)[...] += np.rint(np.bincount(k0, weights=nbytes, minlength=size)).astype(np.int64)
    flat_busy = out.busy_us.reshape(-1)
    flat_busy += np.bincount(k0, weights=busy * ((edge - b_start) / level.width), minlength=size)
    spill = np.flatnonzero(i1 > i0)
    if len(spill):
        k1 = slot_of_row[spill] * n_buckets + i1[spill]
        rest = busy[spill] * ((b_end[spill] - edge[spill]) / level.width)
        flat_busy += np.bincount(k1, weights=rest, minlength=size)
