"""The query files of a closed trace, built from its Parquet parts.

- ``seg-NNNNNN.arrow``: operations of consecutive parts (about SEGMENT_OPERATIONS each), sorted by
  (tid, start_us), Arrow IPC uncompressed so readers memory-map it (segment.write_segment), with its
  dictionaries and lane index in ``seg-NNNNNN.dict.json``;
- ``lod.arrow``: the trace's level-of-detail pyramid (see ``compact``);
- ``spans.parquet`` and ``counters.parquet``: all spans / counter samples in one file each;
- ``stats.json``: the unfiltered statistics of the whole trace (written last, after meta.json says compacted).

Compaction holds one segment in memory at a time. The operation parts are deleted once the segment
files exist and meta.json says ``compacted`` (readers that listed them retry, see reader.open_trace_data);
the span and counter parts are replaced the same way.
"""

import contextlib
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from app.traces import lod
from app.traces.segment import segment_from_table, write_segment
from app.traces.store import iter_parts, read_summary

SEGMENT_OPERATIONS: Final = 1_000_000  # bounds compaction memory (~0.6 GB peak) and time
N_KINDS: Final = lod.N_KINDS


def _groups(parts: list[Path]) -> list[list[Path]]:
    groups: list[list[Path]] = [[]]
    rows = 0
    for part in parts:
        if rows >= SEGMENT_OPERATIONS:
            groups.append([])
            rows = 0
        groups[-1].append(part)
        rows += pq.ParquetFile(part).metadata.num_rows
    return [group for group in groups if group]


def write_pyramid(levels: list[lod.Level], path: Path) -> None:
    table = pa.concat_tables([_level_table(level) for level in levels]) if levels else _level_table(None)
    # One record batch: read_pyramid then maps it without a copy (one batch per level made it copy ~250 MB at
    # 10M operations, most of a cold timeline open).
    table = table.combine_chunks()
    temporary = path.with_name(f".{path.name}.tmp")
    with pa.OSFile(str(temporary), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    temporary.replace(path)


def _level_table(level: lod.Level | None) -> pa.Table:
    if level is None:
        empty64 = np.empty(0, dtype=np.int64)
        return pa.table(
            {
                "width": empty64,
                "tid": empty64,
                "bucket": empty64,
                "busy_us": np.empty(0),
                "count": empty64,
                "bytes": empty64,
                "kind_us": pa.FixedSizeListArray.from_arrays(pa.array(np.empty(0, dtype=np.float32)), N_KINDS),
                "kind_count": pa.FixedSizeListArray.from_arrays(pa.array(np.empty(0, dtype=np.int32)), N_KINDS),
            }
        )
    return pa.table(
        {
            "width": np.full(len(level), level.width, dtype=np.int64),
            "tid": level.tid,
            "bucket": level.bucket,
            "busy_us": level.busy_us,
            "count": level.count,
            "bytes": level.bytes,
            "kind_us": pa.FixedSizeListArray.from_arrays(pa.array(level.kind_us.reshape(-1)), N_KINDS),
            "kind_count": pa.FixedSizeListArray.from_arrays(pa.array(level.kind_count.reshape(-1)), N_KINDS),
        }
    )


def read_pyramid(path: Path) -> list[lod.Level]:
    """Memory-map a pyramid file: each level is a zero-copy slice."""
    table = pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all().combine_chunks()
    if table.num_rows == 0:
        return []

    def column(name: str) -> npt.NDArray[Any]:
        return np.asarray(table[name].chunk(0).to_numpy(zero_copy_only=True))

    widths = column("width")
    kind_us = np.asarray(table["kind_us"].chunk(0).values.to_numpy()).reshape(-1, N_KINDS)
    kind_count = np.asarray(table["kind_count"].chunk(0).values.to_numpy()).reshape(-1, N_KINDS)
    tid, bucket, busy, count, nbytes = (column(name) for name in ("tid", "bucket", "busy_us", "count", "bytes"))
    levels = []
    starts = np.flatnonzero(np.concatenate(([True], widths[1:] != widths[:-1])))
    ends = np.concatenate((starts[1:], [len(widths)]))
    for begin, end in zip(starts, ends, strict=True):
        rows = slice(int(begin), int(end))
        levels.append(
            lod.Level(
                width=int(widths[begin]),
                tid=tid[rows],
                bucket=bucket[rows],
                busy_us=busy[rows],
                count=count[rows],
                bytes=nbytes[rows],
                kind_us=kind_us[rows],
                kind_count=kind_count[rows],
            )
        )
    return levels


def _merge_parts(directory: Path, kind: str, sort_keys: list[tuple[str, str]]) -> None:
    parts = list(iter_parts(directory, kind))
    if not parts:
        return
    table = pa.concat_tables([pq.read_table(part) for part in parts], promote_options="permissive")
    table = table.unify_dictionaries().sort_by(sort_keys)
    final = directory / f"{kind}.parquet"
    temporary = final.with_name(f".{final.name}.tmp")
    pq.write_table(table, temporary, compression="zstd")
    temporary.replace(final)


PYRAMID_FILE: Final = "lod.arrow"


def compact(directory: Path) -> None:
    """Build the segment, pyramid, span and counter files from the parts (the parts stay until cleanup).

    One pyramid for the whole trace: each segment's finest level is built at one width chosen for the
    whole trace, the finest levels are merged, and the coarser levels summed from that, so a zoomed-out
    view reads one pyramid whatever the number of segments.
    """
    summary = read_summary(directory)
    parts = list(iter_parts(directory, "ops"))
    operations = sum(pq.ParquetFile(part).metadata.num_rows for part in parts)
    k = lod.MAX_LEVEL
    if summary is not None and summary.t_min_us is not None and summary.t_max_us is not None:
        k = lod.finest_level_for(
            operations,
            len(summary.lane_totals),
            summary.t_max_us - summary.t_min_us,
            sum(totals.busy_us for totals in summary.lane_totals.values()),
        )
    streams: dict[tuple[int, str], int] = {}  # where each thread's access stream to a file ended so far
    finest: list[lod.Level] = []
    for number, group in enumerate(_groups(parts), start=1):
        table = pa.concat_tables([pq.read_table(part) for part in group], promote_options="permissive")
        segment = segment_from_table(table, streams)
        del table
        if len(segment):
            finest.append(lod.build_level(segment, k))
        write_segment(segment, directory / f"seg-{number:06d}.arrow")
    write_pyramid(lod.pyramid_from(lod.merge_levels(finest)) if finest else [], directory / PYRAMID_FILE)
    _merge_parts(directory, "spans", [("tid", "ascending"), ("start_us", "ascending")])
    _merge_parts(directory, "counters", [("t_us", "ascending")])


def remove_parts(directory: Path) -> None:
    """After meta.json says compacted: the parts are no longer read."""
    for kind in ("ops", "spans", "counters"):
        for part in iter_parts(directory, kind):
            with contextlib.suppress(FileNotFoundError):
                part.unlink()


WHOLE_STATS_FILE: Final = "stats.json"


def write_whole_stats(directory: Path) -> None:
    """Statistics of the whole trace, unfiltered: what the stats panel asks first, answered from a file."""
    from app.traces.reader import open_trace_data
    from app.traces.stats import read_stats
    from app.traces.store import write_json_atomically
    from app.traces.window import Filters

    data = open_trace_data(directory)
    if data is None or data.summary.t_min_us is None or data.summary.t_max_us is None:
        return
    result = read_stats(data, t0=data.summary.t_min_us, t1=data.summary.t_max_us, filters=Filters())
    write_json_atomically(directory / WHOLE_STATS_FILE, result)
