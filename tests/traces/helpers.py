"""Small traces with known answers, written through the real writer and read back through the reader."""

from collections.abc import Iterable
from pathlib import Path

from app.traces.operation import Operation
from app.traces.reader import TraceData, open_trace_data
from app.traces.records import CounterSample, Lane, Span
from app.traces.store import TraceWriter

NAMES = {"read": "pread64", "write": "pwrite64", "fsync": "fsync", "open": "openat", "close": "close", "other": "stat"}


def op(
    start: int,
    duration: int = 10,
    tid: int = 1,
    kind: str = "write",
    *,
    size: int | None = 16384,
    offset: int | None = 0,
    path: str | None = "/d/t.ibd",
    name: str | None = None,
    result: str = "OK",
) -> Operation:
    if kind not in ("read", "write"):
        size = offset = None
    return Operation(start, duration, tid, name or NAMES[kind], kind, path, offset, size, result)


def make_trace(
    directory: Path,
    operations: Iterable[Operation] = (),
    *,
    spans: Iterable[Span] = (),
    counters: Iterable[CounterSample] = (),
    lanes: Iterable[Lane] = (),
    close: bool = True,
    flush_every_ops: int = 200_000,
) -> TraceData:
    writer = TraceWriter(directory, flush_every_ops=flush_every_ops)
    for lane in lanes:
        writer.set_lane(lane)
    batch = list(operations)
    for first in range(0, len(batch), flush_every_ops):  # in parts, as a live capture hands them over
        writer.add_operations(batch[first : first + flush_every_ops])
    writer.add_spans(list(spans))
    writer.add_counters(list(counters))
    if close:
        writer.close()
    else:
        writer.flush()
    data = open_trace_data(directory)
    assert data is not None
    return data
