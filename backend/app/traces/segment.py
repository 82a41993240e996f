"""A run of operations sorted by (tid, start_us), as numpy columns, with the per-lane index queries need.

A segment comes either from one Parquet part of a trace still recording (decoded into memory) or from a
compacted segment file (Arrow IPC, memory-mapped: opening it reads nothing, the OS pages in what a
query touches). Strings are int codes into the segment's own dictionaries; a missing offset or size is
``NULL_INT``. ``end_max`` is the running maximum of ``start_us + duration_us`` within each lane, so the
first operation of a lane that can still overlap a time ``t`` is ``searchsorted(end_max, t, "right")``.
``sequential`` says whether an access started where the previous access of its lane to the same file
ended (see ``sequential_flags``).
"""

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from app.traces.store import KINDS, write_json_atomically

Int64s = npt.NDArray[np.int64]
NULL_INT: Final = np.iinfo(np.int64).min
KIND_CODE: Final = {kind: code for code, kind in enumerate(KINDS)}

SEGMENT_SCHEMA: Final = pa.schema(
    [
        ("start_us", pa.int64()),
        ("duration_us", pa.int64()),
        ("tid", pa.int64()),
        ("kind", pa.int8()),
        ("op", pa.int32()),
        ("path", pa.int32()),  # -1: no path
        ("result", pa.int32()),
        ("offset", pa.int64()),
        ("size", pa.int64()),
        ("end_max", pa.int64()),
        ("sequential", pa.int8()),
    ]
)


@dataclass
class Segment:
    start: Int64s
    duration: Int64s
    tid: Int64s
    kind: npt.NDArray[np.int8]
    op: npt.NDArray[np.int32]
    path: npt.NDArray[np.int32]
    result: npt.NDArray[np.int32]
    offset: Int64s
    size: Int64s
    end_max: Int64s
    sequential: npt.NDArray[np.bool_]
    ops: list[str]
    paths: list[str]
    results: list[str]
    # tid -> [begin, end) rows
    lanes: dict[int, tuple[int, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    @cached_property
    def end(self) -> Int64s:
        return self.start + self.duration

    # Names by code as object arrays, so a column of codes turns into names with one take; code -1 (none)
    # picks the last element.
    @cached_property
    def op_names(self) -> npt.NDArray[np.object_]:
        return np.array([*self.ops, None], dtype=object)

    @cached_property
    def path_names(self) -> npt.NDArray[np.object_]:
        return np.array([*self.paths, None], dtype=object)

    @cached_property
    def result_names(self) -> npt.NDArray[np.object_]:
        return np.array([*self.results, ""], dtype=object)

    @cached_property
    def t_min(self) -> int:
        return int(self.start.min()) if len(self) else 0

    @cached_property
    def t_max(self) -> int:
        return int(self.end.max()) if len(self) else 0

    def overlaps(self, t0: int, t1: int) -> bool:
        """Whether any operation may touch [t0, t1)."""
        return len(self) > 0 and self.t_min < t1 and self.t_max >= t0

    def window_rows(self, tid: int, t0: int, t1: int) -> tuple[int, int]:
        """Rows [lo, hi) of the lane that may overlap [t0, t1): every overlapping one is inside."""
        begin, end = self.lanes.get(tid, (0, 0))
        if begin == end:
            return 0, 0
        lo = begin + int(np.searchsorted(self.end_max[begin:end], t0, side="right"))
        hi = begin + int(np.searchsorted(self.start[begin:end], t1, side="left"))
        return lo, max(lo, hi)

    def bytes_of(self, rows: npt.NDArray[np.intp] | slice) -> Int64s:
        sizes = self.size[rows]
        return np.where(sizes == NULL_INT, 0, sizes)


def lane_ranges(tids: Int64s) -> dict[int, tuple[int, int]]:
    """tid -> [begin, end) of a column sorted by tid."""
    if not len(tids):
        return {}
    starts = np.flatnonzero(np.diff(tids)) + 1
    begins = np.concatenate(([0], starts))
    ends = np.concatenate((starts, [len(tids)]))
    return {int(tids[b]): (int(b), int(e)) for b, e in zip(begins, ends, strict=True)}


def running_end_max(tids: Int64s, ends: Int64s, lanes: dict[int, tuple[int, int]]) -> Int64s:
    out = np.empty_like(ends)
    for begin, end in lanes.values():
        np.maximum.accumulate(ends[begin:end], out=out[begin:end])
    return out


def sequential_flags(
    tids: Int64s,
    paths: npt.NDArray[np.int32],
    starts: Int64s,
    offsets: Int64s,
    sizes: Int64s,
    kinds: npt.NDArray[np.int8],
    carry: dict[tuple[int, str], int] | None = None,
    path_names: list[str] | None = None,
) -> npt.NDArray[np.bool_]:
    """An access (read or write with a file and an offset) is sequential when it starts where the
    previous access of the same thread to the same file ended (offset == previous offset + size).

    ``carry`` holds where each (tid, path) stream of the previous segments ended: the first access of a
    stream here is checked against it (and it is updated); without it, a first access is not sequential.
    """
    flags = np.zeros(len(starts), dtype=np.bool_)
    access = (offsets != NULL_INT) & (paths >= 0) & ((kinds == KIND_CODE["read"]) | (kinds == KIND_CODE["write"]))
    rows = np.flatnonzero(access)
    if not len(rows):
        return flags
    order = rows[np.lexsort((starts[rows], paths[rows], tids[rows]))]
    ends = offsets[order] + np.where(sizes[order] == NULL_INT, 0, sizes[order])
    same_stream = (tids[order][1:] == tids[order][:-1]) & (paths[order][1:] == paths[order][:-1])
    flags[order[1:]] = same_stream & (offsets[order][1:] == ends[:-1])
    if carry is not None and path_names is not None:
        firsts = np.flatnonzero(np.concatenate(([True], ~same_stream)))
        lasts = np.concatenate((firsts[1:] - 1, [len(order) - 1]))
        for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
            row = int(order[first])
            key = (int(tids[row]), path_names[int(paths[row])])
            if carry.get(key) == int(offsets[row]):
                flags[row] = True
            carry[key] = int(ends[last])
    return flags


def _codes(column: pa.ChunkedArray) -> tuple[npt.NDArray[np.int32], list[str]]:
    """Dictionary codes (-1 for null) and the dictionary of a dictionary-encoded column."""
    combined = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(combined.type):
        combined = combined.dictionary_encode()
    indices = combined.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return indices, [str(v) for v in combined.dictionary.to_pylist()]


def _ints(column: pa.ChunkedArray) -> Int64s:
    return np.asarray(column.fill_null(NULL_INT).to_numpy(), dtype=np.int64)


def segment_from_table(table: pa.Table, carry: dict[tuple[int, str], int] | None = None) -> Segment:
    """A segment from a table with store.OPERATION_SCHEMA's columns (any order: it is sorted here).
    ``carry``: see sequential_flags (compaction passes one along the segments of a trace)."""
    table = table.sort_by([("tid", "ascending"), ("start_us", "ascending")])
    table = table.unify_dictionaries()
    op, ops = _codes(table["op"])
    path, paths = _codes(table["path"])
    result, results = _codes(table["result"])
    kind_codes, kind_names = _codes(table["kind"])
    kind_map = np.array([KIND_CODE.get(name, KIND_CODE["other"]) for name in kind_names] or [0], dtype=np.int8)
    kind = kind_map[kind_codes]
    start, duration, tid = _ints(table["start_us"]), _ints(table["duration_us"]), _ints(table["tid"])
    offset, size = _ints(table["offset"]), _ints(table["size"])
    lanes = lane_ranges(tid)
    return Segment(
        start=start,
        duration=duration,
        tid=tid,
        kind=kind,
        op=op,
        path=path,
        result=result,
        offset=offset,
        size=size,
        end_max=running_end_max(tid, start + duration, lanes),
        sequential=sequential_flags(tid, path, start, offset, size, kind, carry, paths),
        ops=ops,
        paths=paths,
        results=results,
        lanes=lanes,
    )


def read_part(path: Path) -> Segment:
    return segment_from_table(pq.read_table(path))


def write_segment(segment: Segment, path: Path) -> None:
    """Arrow IPC, uncompressed, so readers can memory-map it; dictionaries beside it in JSON."""
    table = pa.Table.from_arrays(
        [
            pa.array(segment.start),
            pa.array(segment.duration),
            pa.array(segment.tid),
            pa.array(segment.kind),
            pa.array(segment.op),
            pa.array(segment.path),
            pa.array(segment.result),
            pa.array(segment.offset),
            pa.array(segment.size),
            pa.array(segment.end_max),
            pa.array(segment.sequential.view(np.int8)),
        ],
        schema=SEGMENT_SCHEMA,
    )
    temporary = path.with_name(f".{path.name}.tmp")
    with pa.OSFile(str(temporary), "wb") as sink, pa.ipc.new_file(sink, SEGMENT_SCHEMA) as writer:
        writer.write_table(table, max_chunksize=len(segment) or 1)
    write_json_atomically(
        path.with_suffix(".dict.json"),
        {
            "ops": segment.ops,
            "paths": segment.paths,
            "results": segment.results,
            "lanes": [[tid, begin, end] for tid, (begin, end) in segment.lanes.items()],
            "t_min": segment.t_min,
            "t_max": segment.t_max,
        },
    )
    temporary.replace(path)


def open_segment(path: Path) -> Segment:
    """Memory-map a segment file written by write_segment: zero-copy numpy views of its columns."""
    import json

    source = pa.memory_map(str(path), "r")
    table = pa.ipc.open_file(source).read_all()
    dictionaries = json.loads(path.with_suffix(".dict.json").read_text())

    def column(name: str) -> npt.NDArray[np.generic]:
        chunked = table[name]
        if chunked.num_chunks == 0:
            return np.empty(0, dtype=chunked.type.to_pandas_dtype())
        return np.asarray(chunked.chunk(0).to_numpy(zero_copy_only=True))

    segment = Segment(
        start=column("start_us").astype(np.int64, copy=False),
        duration=column("duration_us").astype(np.int64, copy=False),
        tid=column("tid").astype(np.int64, copy=False),
        kind=column("kind").astype(np.int8, copy=False),
        op=column("op").astype(np.int32, copy=False),
        path=column("path").astype(np.int32, copy=False),
        result=column("result").astype(np.int32, copy=False),
        offset=column("offset").astype(np.int64, copy=False),
        size=column("size").astype(np.int64, copy=False),
        end_max=column("end_max").astype(np.int64, copy=False),
        sequential=column("sequential").view(np.bool_),
        ops=dictionaries["ops"],
        paths=dictionaries["paths"],
        results=dictionaries["results"],
        lanes={int(tid): (int(begin), int(end)) for tid, begin, end in dictionaries["lanes"]},
    )
    if "t_min" in dictionaries:  # known without reading the columns
        segment.__dict__["t_min"], segment.__dict__["t_max"] = dictionaries["t_min"], dictionaries["t_max"]
    return segment
