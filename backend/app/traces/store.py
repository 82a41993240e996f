"""A job's trace on disk, and the writer producers feed while the job runs.

Layout of ``{data_dir}/traces/{job_id}/``::

    meta.json                    status, counts, lanes, counter tracks, producer facts; rewritten atomically
    ops/part-000001.parquet      operations, one file per flush, sorted by (tid, start_us)
    ops/part-000001-000063.parquet  a run of 32 small parts merged (the small ones are then skipped)
    spans/part-000002.parquet    CPU and SQL state spans
    counters/part-000003.parquet counter samples

Every file appears by rename, so a reader never sees half a file: it lists the parts and reads what is
there while the writer goes on appending. ``meta.json`` is written after the part it counts.
On close the writer builds the query files instead (see ``compact``): memory-mappable segments of
operations sorted by lane and time with their level-of-detail pyramids, the spans and counters in one
file each, and the whole trace's statistics; then the parts are removed.

Strings (op, kind, path, result, span labels, counter tracks) are dictionary-encoded in every part.
"""

import json
import logging
import operator
import queue
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from app.core.config import Settings
from app.traces import tally
from app.traces.operation import Malformed, Operation
from app.traces.records import CounterSample, Lane, Span

KINDS: Final = ("read", "write", "fsync", "open", "close", "other")
MERGE_PARTS: Final = 32  # small parts merged into one this many at a time
MALFORMED_KEPT: Final = 100
META_FILE: Final = "meta.json"
FORMAT_VERSION: Final = 1

_STRING = pa.dictionary(pa.int32(), pa.string())
OPERATION_SCHEMA: Final = pa.schema(
    [
        ("start_us", pa.int64()),
        ("duration_us", pa.int64()),
        ("tid", pa.int64()),
        ("op", _STRING),
        ("kind", _STRING),
        ("path", _STRING),
        ("offset", pa.int64()),
        ("size", pa.int64()),
        ("result", _STRING),
    ]
)
SPAN_SCHEMA: Final = pa.schema(
    [
        ("tid", pa.int64()),
        ("start_us", pa.int64()),
        ("duration_us", pa.int64()),
        ("track", _STRING),
        ("label", _STRING),
    ]
)
COUNTER_SCHEMA: Final = pa.schema(
    [("track", _STRING), ("t_us", pa.int64()), ("value", pa.float64()), ("unit", _STRING)]
)


def trace_dir(settings: Settings, job_id: int) -> Path:
    return settings.data_dir / "traces" / str(job_id)


def write_json_atomically(path: Path, value: object) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(value, separators=(",", ":")))
    temporary.replace(path)


class _Dictionary:
    """Strings to stable int codes for one column, across every part of the trace."""

    def __init__(self) -> None:
        self.codes: dict[str | None, int | None] = {None: None}
        self.values: list[str] = []

    def encode(self, column: list[str | None]) -> pa.DictionaryArray:
        return self.encode_field(column, None)

    def encode_field(self, records: Sequence[Any], name: str | None) -> pa.DictionaryArray:
        """Codes of ``records``' attribute ``name`` (of the records themselves when None), in one C-level pass."""
        codes = self.codes
        values = records if name is None else list(map(operator.attrgetter(name), records))
        try:
            indices = list(map(codes.__getitem__, values))
        except KeyError:
            for value in values:
                if value not in codes:
                    codes[value] = len(self.values)
                    self.values.append(str(value))
            indices = list(map(codes.__getitem__, values))
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(self.values, pa.string()))


def operations_table(operations: list[Operation], dictionaries: dict[str, _Dictionary]) -> pa.Table:
    """Column by column: a list comprehension per field is the fastest way out of Python objects."""
    columns = [
        pa.array([o.start_us for o in operations], pa.int64()),
        pa.array([o.duration_us for o in operations], pa.int64()),
        pa.array([o.tid for o in operations], pa.int64()),
        dictionaries["op"].encode_field(operations, "op"),
        dictionaries["kind"].encode_field(operations, "kind"),
        dictionaries["path"].encode_field(operations, "path"),
        pa.array([o.offset for o in operations], pa.int64()),
        pa.array([o.size for o in operations], pa.int64()),
        dictionaries["result"].encode_field(operations, "result"),
    ]
    return pa.Table.from_arrays(columns, schema=OPERATION_SCHEMA)


def _spans_table(spans: list[Span], dictionaries: dict[str, _Dictionary]) -> pa.Table:
    columns = [
        pa.array([s.tid for s in spans], pa.int64()),
        pa.array([s.start_us for s in spans], pa.int64()),
        pa.array([s.duration_us for s in spans], pa.int64()),
        dictionaries["track"].encode([s.track for s in spans]),
        dictionaries["label"].encode([s.label for s in spans]),
    ]
    return pa.Table.from_arrays(columns, schema=SPAN_SCHEMA)


def _counters_table(samples: list[CounterSample], dictionaries: dict[str, _Dictionary]) -> pa.Table:
    columns = [
        dictionaries["counter"].encode([c.track for c in samples]),
        pa.array([c.t_us for c in samples], pa.int64()),
        pa.array([c.value for c in samples], pa.float64()),
        dictionaries["unit"].encode([c.unit for c in samples]),
    ]
    return pa.Table.from_arrays(columns, schema=COUNTER_SCHEMA)


@dataclass
class LaneTotals:
    operations: int = 0
    busy_us: int = 0  # sum of operation durations (overlapping async operations count each)
    bytes: int = 0


@dataclass
class TraceSummary:
    """What meta.json holds and what the job store's summary row is made of."""

    status: str = "recording"
    operations: int = 0
    kinds: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    t_min_us: int | None = None
    t_max_us: int | None = None
    bytes_read: int = 0
    bytes_written: int = 0
    spans: int = 0
    counter_samples: int = 0
    counters: dict[str, str] = field(default_factory=dict)  # track -> unit
    lanes: list[dict[str, Any]] = field(default_factory=list)  # records.Lane as dicts, tid order
    lane_totals: dict[int, LaneTotals] = field(default_factory=dict)
    malformed_lines: int = 0
    malformed: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, str | int | float | None] = field(default_factory=dict)
    parts: int = 0
    compacted: bool = False
    # Tells this recording from an earlier one in the same directory (caches key on it).
    trace_id: str = ""

    def add_part(self, part: tally.PartTotals) -> None:
        self.operations += part.operations
        for kind, count in part.kinds.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + count
        self.t_min_us = part.t_min_us if self.t_min_us is None else min(self.t_min_us, part.t_min_us)
        self.t_max_us = part.t_max_us if self.t_max_us is None else max(self.t_max_us, part.t_max_us)
        self.bytes_read += part.bytes_read
        self.bytes_written += part.bytes_written
        for tid, (count, busy, size) in part.lanes.items():
            totals = self.lane_totals.setdefault(tid, LaneTotals())
            totals.operations += count
            totals.busy_us += busy
            totals.bytes += size

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["version"] = FORMAT_VERSION
        data["lane_totals"] = {str(tid): asdict(totals) for tid, totals in self.lane_totals.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TraceSummary":
        values = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        values["lane_totals"] = {int(tid): LaneTotals(**t) for tid, t in data.get("lane_totals", {}).items()}
        kinds = dict.fromkeys(KINDS, 0)
        kinds.update(data.get("kinds", {}))
        values["kinds"] = kinds
        return cls(**values)


def read_summary(directory: Path) -> TraceSummary | None:
    """The trace's meta.json, or None when there is no trace in that directory."""
    try:
        return TraceSummary.from_json(json.loads((directory / META_FILE).read_text()))
    except FileNotFoundError:
        return None


@dataclass
class _Batch:
    operations: list[Operation] = field(default_factory=list)
    operation_tables: list[pa.Table] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    counters: list[CounterSample] = field(default_factory=list)

    def __len__(self) -> int:
        tabled: int = sum(int(table.num_rows) for table in self.operation_tables)
        return len(self.operations) + tabled + len(self.spans) + len(self.counters)


@dataclass
class _Tables:
    """One batch converted, waiting to be written."""

    operations: pa.Table | None = None
    spans: pa.Table | None = None
    counters: pa.Table | None = None
    counter_units: dict[str, str] = field(default_factory=dict)


class TraceClosed(RuntimeError):
    """A producer wrote to a trace after it was closed."""


class TraceWriter:
    """Implements records.TraceSink. Safe to call from several threads.

    Records go into an in-memory batch; a batch is handed to one background thread when it reaches
    ``flush_every_ops`` records, or every ``flush_every_s`` seconds, and written as Parquet parts. At most
    two batches wait for that thread, so a producer faster than the disk is slowed down rather than
    growing memory without bound. ``close()`` writes what is left, builds the query files and marks the
    trace complete (or ``failed``). An error of the background thread is raised by the next call.
    """

    def __init__(
        self,
        directory: Path,
        *,
        flush_every_ops: int = 200_000,
        flush_every_s: float = 1.0,
        on_close: Callable[[TraceSummary], None] | None = None,
        compact_on_close: bool = True,
    ) -> None:
        self.directory = directory
        self.flush_every_ops = flush_every_ops
        self.flush_every_s = flush_every_s
        self._on_close = on_close
        self._compact_on_close = compact_on_close
        # A trace starts empty: a retried job or a re-import replaces what an earlier attempt left.
        if directory.exists():
            shutil.rmtree(directory)
        for sub in ("ops", "spans", "counters"):
            (directory / sub).mkdir(parents=True)
        self._lock = threading.Lock()
        self._batch = _Batch()
        self._summary = TraceSummary(trace_id=uuid.uuid4().hex)
        self._lanes: dict[int, Lane] = {}
        self._small_parts: dict[str, list[tuple[int, int]]] = {}  # kind -> [(part number, rows)] since a merge
        self._meta_dirty = True
        self._closed = False
        self._holders = 1
        self._failed_by_holder = False
        self._error: BaseException | None = None
        self._dictionaries = {
            name: _Dictionary() for name in ("op", "kind", "path", "result", "track", "label", "counter", "unit")
        }
        # Batches wait for conversion, converted tables for writing; both bounded (back-pressure).
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=2)
        self._tables: queue.Queue[_Tables | None] = queue.Queue(maxsize=1)
        self._flusher = threading.Thread(target=self._run_flusher, name=f"trace-convert-{directory.name}", daemon=True)
        self._part_writer = threading.Thread(
            target=self._run_part_writer, name=f"trace-write-{directory.name}", daemon=True
        )
        self._write_meta()
        self._flusher.start()
        self._part_writer.start()

    # --- the TraceSink interface -------------------------------------------------------------------
    def add_operations(self, operations: Iterable[Operation]) -> None:
        with self._lock:
            self._check_open()
            self._batch.operations.extend(operations)
            full = self._take_if_full()
        self._hand_off(full)

    def add_operation_table(self, table: pa.Table) -> None:
        """Operations already in columns (OPERATION_SCHEMA's names; strings plain or dictionary-encoded):
        for producers that parse into arrays, it skips the per-object conversion."""
        missing = set(OPERATION_SCHEMA.names) - set(table.schema.names)
        if missing:
            raise ValueError(f"operation table lacks the columns {sorted(missing)}")
        table = table.select(OPERATION_SCHEMA.names).cast(OPERATION_SCHEMA)
        with self._lock:
            self._check_open()
            self._batch.operation_tables.append(table)
            full = self._take_if_full()
        self._hand_off(full)

    def set_lane(self, lane: Lane) -> None:
        with self._lock:
            self._check_open()
            self._lanes[lane.tid] = lane
            self._meta_dirty = True

    def add_spans(self, spans: Iterable[Span]) -> None:
        with self._lock:
            self._check_open()
            self._batch.spans.extend(spans)
            full = self._take_if_full()
        self._hand_off(full)

    def add_counters(self, samples: Iterable[CounterSample]) -> None:
        with self._lock:
            self._check_open()
            self._batch.counters.extend(samples)
            full = self._take_if_full()
        self._hand_off(full)

    # --- beyond the sink ---------------------------------------------------------------------------
    def set_meta(self, **values: str | int | float | None) -> None:
        """Facts about the capture (backend, aio_mode, visibility, fallback_reason...); later values win."""
        with self._lock:
            self._check_open()
            self._summary.meta.update(values)
            self._meta_dirty = True

    def add_malformed(self, lines: Iterable[Malformed]) -> None:
        """Input lines that could not be read: all are counted, the first 100 kept."""
        with self._lock:
            self._check_open()
            for bad in lines:
                self._summary.malformed_lines += 1
                if len(self._summary.malformed) < MALFORMED_KEPT:
                    self._summary.malformed.append({"line_no": bad.line_no, "reason": bad.reason, "text": bad.text})
            self._summary.malformed.sort(key=lambda bad: int(bad["line_no"]))
            self._meta_dirty = True

    def flush(self) -> None:
        """Write everything handed over so far and wait until it is on disk (readers see it)."""
        with self._lock:
            self._check_open()
            batch, self._batch = self._batch, _Batch()
            self._meta_dirty = True
        self._queue.put(batch)
        self._queue.join()  # every batch converted and its tables queued...
        self._tables.join()  # ...and written

    def share(self) -> "TraceWriter":
        """One more holder (another producer of the same job): the trace ends at the last holder's close."""
        with self._lock:
            self._check_open()
            self._holders += 1
        return self

    def close(self, *, status: str = "complete") -> TraceSummary:
        """Write what is buffered, build the query files and mark the trace ``status``; returns the summary.

        With several holders (``share``), only the last close does that; the trace is failed if any
        holder closed it as failed."""
        with self._lock:
            if self._closed:
                return self._summary
            self._failed_by_holder |= status == "failed"
            self._holders -= 1
            if self._holders > 0:
                return self._summary
            status = "failed" if self._failed_by_holder else status
            self._closed = True
            rest, self._batch = self._batch, _Batch()
        self._queue.put(rest)
        self._queue.put(None)
        self._flusher.join()
        self._part_writer.join()
        if self._error is not None and status == "complete":
            status = "failed"
        if self._compact_on_close and self._error is None:
            from app.traces import compact  # the query side; imported late to keep the writer light

            try:
                compact.compact(self.directory)
                self._summary.compacted = True
            except Exception as error:  # the parts stay readable: a trace without query files is still a trace
                self._error = error
                status = "failed"
        self._summary.status = status
        self._write_meta()
        if self._summary.compacted:
            compact.remove_parts(self.directory)
            try:
                compact.write_whole_stats(self.directory)
            except Exception:  # only a shortcut: the API computes the same on request
                logging.getLogger(__name__).exception("precomputing the stats of %s failed", self.directory)
        if self._on_close is not None:
            self._on_close(self._summary)
        if self._error is not None:
            raise RuntimeError(f"writing the trace in {self.directory} failed") from self._error
        return self._summary

    @property
    def summary(self) -> TraceSummary:
        return self._summary

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close(status="failed" if error is not None else "complete")

    # --- internals ---------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"writing the trace in {self.directory} failed") from self._error
        if self._closed:
            raise TraceClosed(f"the trace in {self.directory} is closed")

    def _take_if_full(self) -> _Batch | None:
        if len(self._batch) < self.flush_every_ops:
            return None
        full, self._batch = self._batch, _Batch()
        return full

    def _hand_off(self, batch: _Batch | None) -> None:
        if batch is not None:
            self._queue.put(batch)  # blocks while two batches wait: back-pressure keeps memory bounded

    def _run_flusher(self) -> None:
        """Turns batches of records into tables (Python work, holding the GIL) for the part writer."""
        deadline = time.monotonic() + self.flush_every_s
        while True:
            try:
                batch = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                with self._lock:
                    batch, self._batch = self._batch, _Batch()
                self._convert_or_keep_error(batch)
                deadline = time.monotonic() + self.flush_every_s
                continue
            if batch is None:
                self._tables.put(None)
                self._queue.task_done()
                return
            if time.monotonic() >= deadline:
                deadline = time.monotonic() + self.flush_every_s
            self._convert_or_keep_error(batch)
            self._queue.task_done()

    def _convert_or_keep_error(self, batch: _Batch) -> None:
        if self._error is not None:
            return  # keep draining so producers never block on a dead writer
        try:
            if len(batch) or self._meta_dirty:
                self._tables.put(self._convert(batch))
        except BaseException as error:  # reported to the producer by its next call
            self._error = error

    def _convert(self, batch: _Batch) -> _Tables:
        tables = _Tables()
        parts = list(batch.operation_tables)
        if batch.operations:
            parts.append(operations_table(batch.operations, self._dictionaries))
        if parts:
            table = pa.concat_tables(parts).unify_dictionaries() if len(parts) > 1 else parts[0]
            tables.operations = table.sort_by([("tid", "ascending"), ("start_us", "ascending")])
        if batch.spans:
            tables.spans = _spans_table(batch.spans, self._dictionaries)
        if batch.counters:
            tables.counters = _counters_table(batch.counters, self._dictionaries)
            for sample in batch.counters:
                tables.counter_units.setdefault(sample.track, sample.unit)
        return tables

    def _run_part_writer(self) -> None:
        """Writes the tables as Parquet parts (pyarrow releases the GIL: this overlaps the conversion)."""
        while True:
            tables = self._tables.get()
            if tables is None:
                self._tables.task_done()
                return
            if self._error is None:
                try:
                    self._write_tables(tables)
                except BaseException as error:  # reported to the producer by its next call
                    self._error = error
            self._tables.task_done()

    def _write_tables(self, tables: _Tables) -> None:
        if tables.operations is not None:
            self._write_part("ops", tables.operations)
            self._count_operations(tables.operations)
        if tables.spans is not None:
            self._write_part("spans", tables.spans)
            self._summary.spans += tables.spans.num_rows
        if tables.counters is not None:
            self._write_part("counters", tables.counters)
            self._summary.counter_samples += tables.counters.num_rows
            for track, unit in tables.counter_units.items():
                self._summary.counters.setdefault(track, unit)
        self._write_meta()

    def _write_part(self, kind: str, table: pa.Table) -> None:
        self._summary.parts += 1
        number = self._summary.parts
        _write_parquet(table, self.directory / kind / f"part-{number:06d}.parquet")
        # A long, quiet capture flushes a small part every second: merge runs of them, so readers open
        # a few files rather than thousands.
        small = self._small_parts.setdefault(kind, [])
        small.append((number, table.num_rows))
        if len(small) >= MERGE_PARTS:
            if sum(rows for _, rows in small) < self.flush_every_ops:
                self._merge_parts(kind, [n for n, _ in small])
            small.clear()

    def _merge_parts(self, kind: str, numbers: list[int]) -> None:
        folder = self.directory / kind
        paths = [folder / f"part-{n:06d}.parquet" for n in numbers]
        table = pa.concat_tables([pq.read_table(path) for path in paths], promote_options="permissive")
        table = table.unify_dictionaries().combine_chunks()
        if kind == "ops":
            table = table.sort_by([("tid", "ascending"), ("start_us", "ascending")])
        # The merged part names the range it replaces: readers ignore the small ones from the moment it
        # exists (see iter_parts), and they are deleted right after.
        _write_parquet(table, folder / f"part-{numbers[0]:06d}-{numbers[-1]:06d}.parquet")
        for path in paths:
            path.unlink(missing_ok=True)

    def _count_operations(self, table: pa.Table) -> None:
        totals = tally.part_totals(table)
        with self._lock:
            self._summary.add_part(totals)

    def _write_meta(self) -> None:
        with self._lock:
            self._summary.lanes = [asdict(lane) for _, lane in sorted(self._lanes.items())]
            self._meta_dirty = False
            snapshot = self._summary.to_json()
        write_json_atomically(self.directory / META_FILE, snapshot)


def _write_parquet(table: pa.Table, final: Path) -> None:
    temporary = final.with_name(f".{final.name}.tmp")
    # Dictionary encoding only for the string columns and statistics only for time and lane: trying
    # dictionaries and statistics on every numeric column more than doubles the cost of a part.
    pq.write_table(
        table,
        temporary,
        compression="zstd",
        compression_level=1,
        row_group_size=1 << 20,
        use_dictionary=[field.name for field in table.schema if pa.types.is_dictionary(field.type)],
        write_statistics=[name for name in ("start_us", "tid", "t_us") if name in table.schema.names],
    )
    temporary.replace(final)


def iter_parts(directory: Path, kind: str) -> Iterator[Path]:
    """The finished parts of one record kind, oldest first: ``part-N.parquet``, or ``part-A-B.parquet``
    for parts A..B merged (the parts it replaces are skipped while they are being deleted)."""
    try:
        names = sorted(p.name for p in (directory / kind).iterdir() if p.name.startswith("part-"))
    except FileNotFoundError:
        return
    merged = [tuple(int(n) for n in name[5:-8].split("-")) for name in names if name.count("-") == 2]
    for name in names:
        if name.count("-") == 1:
            number = int(name[5:-8])
            if any(first <= number <= last for first, last in merged):
                continue
        yield directory / kind / name
