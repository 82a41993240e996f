"""Open a trace's files for queries, cheaply and repeatedly: what was decoded or mapped once is cached.

A complete trace is a few memory-mapped segment files with their level-of-detail pyramids (built by
``compact``). A trace still recording is its Parquet parts, each decoded once and kept in a bounded
cache, so a query while the writer appends costs only the parts that appeared since the last one.
"""

import contextlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from app.traces import lod
from app.traces.segment import Int64s, Segment, lane_ranges, open_segment, read_part
from app.traces.store import TraceSummary, iter_parts, read_summary

# Decoded parts of recording traces kept in memory, counted in operations (~80 bytes each).
PART_CACHE_OPERATIONS: Final = 2_000_000
TRACE_CACHE_ENTRIES: Final = 8


@dataclass
class Spans:
    """Spans sorted by (tid, track, start), with the running max of ends per (tid, track)."""

    tid: Int64s
    start: Int64s
    duration: Int64s
    track: npt.NDArray[np.int32]
    label: npt.NDArray[np.int32]
    end_max: Int64s
    tracks: list[str]
    labels: list[str]

    @cached_property
    def groups(self) -> dict[tuple[int, int], tuple[int, int]]:
        """(tid, track code) -> [begin, end) rows."""
        if not len(self.tid):
            return {}
        key = self.tid * (1 << 16) + self.track
        bounds = lane_ranges(key)
        return {(k >> 16, k & 0xFFFF): value for k, value in bounds.items()}


@dataclass
class Counters:
    """Counter samples per track, sorted by time."""

    series: dict[str, tuple[Int64s, npt.NDArray[np.float64]]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)


@dataclass
class TraceData:
    directory: Path
    summary: TraceSummary
    segments: list[Segment]
    pyramids: list[list[lod.Level]]
    # The segments each pyramid covers: one each while recording, all of them once compacted.
    pyramid_segments: list[list[int]]
    spans: Spans
    counters: Counters


def _spans_from_table(table: pa.Table | None) -> Spans:
    if table is None or table.num_rows == 0:
        empty = np.empty(0, dtype=np.int64)
        return Spans(empty, empty, empty, empty.astype(np.int32), empty.astype(np.int32), empty, [], [])
    table = table.unify_dictionaries().combine_chunks()
    track = table["track"].chunk(0)
    label = table["label"].chunk(0)
    tracks = [str(v) for v in track.dictionary.to_pylist()]
    labels = [str(v) for v in label.dictionary.to_pylist()]
    # Sort by (tid, track name, start): track codes follow the dictionary, so sort by the names' order.
    track_rank = np.argsort(np.argsort(np.array(tracks)))
    track_codes = track_rank[track.indices.to_numpy(zero_copy_only=False)].astype(np.int32)
    tids = table["tid"].to_numpy()
    starts = table["start_us"].to_numpy()
    order = np.lexsort((starts, track_codes, tids))
    tid, start = tids[order], starts[order]
    duration = table["duration_us"].to_numpy()[order]
    track_codes = track_codes[order]
    spans = Spans(
        tid=tid.astype(np.int64),
        start=start.astype(np.int64),
        duration=duration.astype(np.int64),
        track=track_codes,
        label=label.indices.to_numpy(zero_copy_only=False)[order].astype(np.int32),
        end_max=np.empty(0, dtype=np.int64),
        tracks=sorted(tracks),
        labels=labels,
    )
    ends = spans.start + spans.duration
    spans.end_max = np.empty_like(ends)
    for begin, end in spans.groups.values():
        np.maximum.accumulate(ends[begin:end], out=spans.end_max[begin:end])
    return spans


def _read_tables(paths: list[Path]) -> pa.Table | None:
    tables = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            tables.append(pq.read_table(path))
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


def _counters_from_table(table: pa.Table | None) -> Counters:
    counters = Counters()
    if table is None or table.num_rows == 0:
        return counters
    tracks = table["track"].cast(pa.string()).to_numpy(zero_copy_only=False)
    units = table["unit"].cast(pa.string()).to_numpy(zero_copy_only=False)
    times = table["t_us"].to_numpy()
    values = table["value"].to_numpy()
    for name in sorted(set(tracks.tolist())):
        mask = tracks == name
        order = np.argsort(times[mask], kind="stable")
        counters.series[str(name)] = (times[mask][order].astype(np.int64), values[mask][order].astype(np.float64))
        counters.units[str(name)] = str(units[mask][0] or "")
    return counters


def read_spans_and_counters(directory: Path) -> tuple[Spans, Counters]:
    spans = _spans_from_table(_read_tables(list(iter_parts(directory, "spans"))))
    return spans, _counters_from_table(_read_tables(list(iter_parts(directory, "counters"))))


class _PartCache:
    """Decoded parts by (path, size, mtime), least recently used dropped past a total of operations."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.entries: OrderedDict[tuple[str, int, int], tuple[Segment, list[lod.Level]]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, path: Path) -> tuple[Segment, list[lod.Level]]:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
        segment = read_part(path)
        entry = (segment, lod.build_pyramid(segment))
        with self.lock:
            self.entries[key] = entry
            while sum(len(s) for s, _ in self.entries.values()) > self.budget and len(self.entries) > 1:
                self.entries.popitem(last=False)
        return entry


_parts = _PartCache(PART_CACHE_OPERATIONS)
_complete: OrderedDict[tuple[str, str], TraceData] = OrderedDict()
_complete_lock = threading.Lock()


def _open_complete(directory: Path, summary: TraceSummary) -> TraceData:
    key = (str(directory), summary.trace_id)  # a closed trace changes no more; a new one gets a new id
    with _complete_lock:
        if key in _complete:
            _complete.move_to_end(key)
            return _complete[key]
    from app.traces.compact import PYRAMID_FILE, read_pyramid

    segment_files = sorted(directory.glob("seg-*.arrow"))
    segment_files = [p for p in segment_files if not p.name.endswith(".lod.arrow")]
    segments = [open_segment(path) for path in segment_files]
    if (directory / PYRAMID_FILE).exists():
        pyramids = [read_pyramid(directory / PYRAMID_FILE)]
        covered = [list(range(len(segments)))]
    else:  # segments with a pyramid each (files written before the pyramid was one)
        pyramids = [read_pyramid(path.with_suffix(".lod.arrow")) for path in segment_files]
        covered = [[number] for number in range(len(segments))]
    spans = _spans_from_table(_read_tables([directory / "spans.parquet"]))
    counters = _counters_from_table(_read_tables([directory / "counters.parquet"]))
    data = TraceData(directory, summary, segments, pyramids, covered, spans, counters)
    with _complete_lock:
        _complete[key] = data
        while len(_complete) > TRACE_CACHE_ENTRIES:
            _complete.popitem(last=False)
    return data


def open_trace_data(directory: Path) -> TraceData | None:
    """The trace in ``directory`` as it is now, or None when there is none."""
    for _attempt in range(3):
        summary = read_summary(directory)
        if summary is None:
            return None
        try:
            if summary.compacted:
                return _open_complete(directory, summary)
            entries = [_parts.get(path) for path in iter_parts(directory, "ops")]
            spans, counters = read_spans_and_counters(directory)
        except FileNotFoundError:
            continue  # the writer compacted the parts away meanwhile: read again
        segments = [segment for segment, _ in entries]
        pyramids = [pyramid for _, pyramid in entries]
        covered = [[number] for number in range(len(segments))]
        return TraceData(directory, summary, segments, pyramids, covered, spans, counters)
    raise RuntimeError(f"the trace in {directory} kept changing while it was read")


def forget(directory: Path) -> None:
    """Drop cached data of a trace (after it is deleted or replaced)."""
    with _complete_lock:
        for key in [k for k in _complete if k[0] == str(directory)]:
            del _complete[key]


def summary_json(directory: Path) -> dict[str, object] | None:
    try:
        value = json.loads((directory / "meta.json").read_text())
    except FileNotFoundError:
        return None
    return value if isinstance(value, dict) else None
