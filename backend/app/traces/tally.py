"""Totals of one part of operations (counts per kind and lane, time range, bytes), for the trace summary."""

from dataclasses import dataclass, field

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]


@dataclass
class PartTotals:
    operations: int
    kinds: dict[str, int]
    t_min_us: int
    t_max_us: int  # the latest end
    bytes_read: int
    bytes_written: int
    # tid -> (operations, summed duration, bytes)
    lanes: dict[int, tuple[int, int, int]] = field(default_factory=dict)


def _bytes_of(table: pa.Table, kind: str) -> int:
    sizes = pc.filter(table["size"], pc.equal(table["kind"].cast(pa.string()), kind))
    return int(pc.sum(sizes).as_py() or 0)


def part_totals(table: pa.Table) -> PartTotals:
    """``table`` has the columns of store.OPERATION_SCHEMA and at least one row."""
    ends = pc.add(table["start_us"], table["duration_us"])
    kinds = {
        str(row["values"]): int(row["counts"]) for row in pc.value_counts(table["kind"].cast(pa.string())).to_pylist()
    }
    per_lane = table.group_by("tid").aggregate([("tid", "count"), ("duration_us", "sum"), ("size", "sum")])
    lanes = {
        int(tid): (int(count), int(busy or 0), int(size or 0))
        for tid, count, busy, size in zip(
            per_lane["tid"].to_pylist(),
            per_lane["tid_count"].to_pylist(),
            per_lane["duration_us_sum"].to_pylist(),
            per_lane["size_sum"].to_pylist(),
            strict=True,
        )
    }
    return PartTotals(
        operations=table.num_rows,
        kinds=kinds,
        t_min_us=int(pc.min(table["start_us"]).as_py()),
        t_max_us=int(pc.max(ends).as_py()),
        bytes_read=_bytes_of(table, "read"),
        bytes_written=_bytes_of(table, "write"),
        lanes=lanes,
    )
