"""Trace store at restore scale: 10 million operations over 64 lanes, written and queried like the app does.

Prints: ingest rate through TraceWriter (records handed to add_operations until close() returns, and
close() alone: the final flush plus the query files), window query latency zoomed out (the whole run at
1600 px) and zoomed in (random 1 ms..1 s windows), stats latency, the size on disk, and peak RSS.
Latencies are of the query function and of the JSON encoding the route adds (wall clock), and the CPU
time of both (what they cost when the machine is shared with other work).

The workload (synthetic, seeded): 4 page cleaners writing 16 KiB pages to .ibd files (runs of
sequential pages at random places), 4 read threads and 50 connections reading 16 KiB pages, one redo
writer (sequential 512 B..64 KiB writes to ib_logfile0, an fdatasync every few writes), one io_uring
lane whose reads overlap, 4 other threads opening/closing files; log-normal durations (median 20-400
us by kind). CPU state spans every 20 ms per lane and 4 counter tracks at 50 Hz go in as well.

    ulimit -v 12000000; PYTHONPATH=backend:. .venv/bin/python bench/timeline_store.py [--operations N]
"""

import argparse
import json
import math
import random
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
from pydantic_core import to_json

from app.traces.compact import WHOLE_STATS_FILE
from app.traces.operation import Operation
from app.traces.reader import open_trace_data
from app.traces.records import CounterSample, Lane, Span
from app.traces.stats import read_stats
from app.traces.store import OPERATION_SCHEMA, TraceWriter
from app.traces.window import Filters, read_window

LANES = 64
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in microseconds
PAGE = 16 * 1024


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Workload:
    """Each lane keeps its own clock; ``slice`` yields the operations of the next stretch of time."""

    def __init__(self, seed: int, ops_per_lane_per_s: float) -> None:
        self.rng = np.random.default_rng(seed)
        self.clock = np.full(LANES, T0, dtype=np.int64)
        self.period_us = 1e6 / ops_per_lane_per_s
        self.redo_offset = 0
        self.page_cursor = self.rng.integers(0, 60_000, LANES) * PAGE
        self.files = [f"/var/lib/mysql/sbtest/sbtest{i}.ibd" for i in range(1, 33)]
        self.roles = (
            ["page cleaner"] * 4
            + ["io read"] * 4
            + ["redo writer", "io_uring"]
            + ["file ops"] * 4
            + ["connection"] * 50
        )

    def lanes(self) -> list[Lane]:
        return [
            Lane(1000 + i, f"{role} {i}", "thread/innodb/x", "mariadbd", 999, i if role == "connection" else None)
            for i, role in enumerate(self.roles)
        ]

    def _durations(self, median_us: float, n: int) -> list[int]:
        values = self.rng.lognormal(math.log(median_us), 0.9, n)
        durations: list[int] = np.maximum(values, 1).astype(np.int64).tolist()
        return durations

    def slice(self, until: int) -> list[Operation]:
        out: list[Operation] = []
        for lane in range(LANES):
            role = self.roles[lane]
            tid = 1000 + lane
            n = max(1, int((until - int(self.clock[lane])) / self.period_us))
            gaps = self.rng.exponential(self.period_us * 0.7, n).astype(np.int64).tolist()
            files = self.rng.integers(0, len(self.files), n).tolist()
            jumps = self.rng.random(n).tolist()
            t = int(self.clock[lane])
            if role == "redo writer":
                durations = self._durations(30, n)
                sizes = (self.rng.integers(1, 129, n) * 512).tolist()
                for i in range(n):
                    if i % 4 == 3:
                        out.append(
                            Operation(
                                t,
                                durations[i] * 10,
                                tid,
                                "fdatasync",
                                "fsync",
                                "/var/lib/mysql/ib_logfile0",
                                None,
                                None,
                                "0",
                            )
                        )
                    else:
                        out.append(
                            Operation(
                                t,
                                durations[i],
                                tid,
                                "pwrite64",
                                "write",
                                "/var/lib/mysql/ib_logfile0",
                                self.redo_offset,
                                sizes[i],
                                str(sizes[i]),
                            )
                        )
                        self.redo_offset += sizes[i]
                    t += durations[i] + gaps[i]
            elif role == "io_uring":
                durations = self._durations(200, n)
                for i in range(n):  # submitted back to back: they overlap
                    offset = int(jumps[i] * 60_000) * PAGE
                    out.append(
                        Operation(
                            t, durations[i], tid, "io_uring_read", "read", self.files[files[i]], offset, PAGE, "16384"
                        )
                    )
                    t += max(1, gaps[i] // 4)
            elif role == "file ops":
                durations = self._durations(20, n)
                for i in range(n):
                    name, kind = ("openat", "open") if i % 2 == 0 else ("close", "close")
                    out.append(Operation(t, durations[i], tid, name, kind, self.files[files[i]], None, None, "0"))
                    t += durations[i] + gaps[i]
            else:
                writes = role == "page cleaner"
                durations = self._durations(60 if writes else 80, n)
                cursor = int(self.page_cursor[lane])
                for i in range(n):
                    if jumps[i] < 0.2:  # a new run somewhere else in the file
                        cursor = int(jumps[i] * 5 * 60_000) * PAGE
                    if writes:
                        out.append(
                            Operation(
                                t,
                                durations[i],
                                tid,
                                "pwrite64",
                                "write",
                                self.files[files[i] % 4],
                                cursor,
                                PAGE,
                                "16384",
                            )
                        )
                    else:
                        out.append(
                            Operation(
                                t, durations[i], tid, "pread64", "read", self.files[files[i]], cursor, PAGE, "16384"
                            )
                        )
                    cursor += PAGE
                    if i % 50 == 49:
                        out.append(
                            Operation(
                                t + durations[i],
                                durations[i] * 8,
                                tid,
                                "fsync",
                                "fsync",
                                self.files[files[i] % 4],
                                None,
                                None,
                                "0",
                            )
                        )
                        t += durations[i] * 8
                    t += durations[i] + gaps[i]
                self.page_cursor[lane] = cursor
            self.clock[lane] = t
        return out


def spans_and_counters(start: int, until: int) -> tuple[list[Span], list[CounterSample]]:
    spans = []
    states = ("running", "blocked", "io_wait", "runnable")
    for t in range(start - start % 20_000, until, 20_000):
        for lane in range(LANES):
            spans.append(Span(1000 + lane, t, 20_000, "cpu", states[(t // 20_000 + lane) % 4]))
    counters = [
        CounterSample(track, t, float((t // 20_000) % 100), unit)
        for t in range(start - start % 20_000, until, 20_000)
        for track, unit in (("cpu.user", "%"), ("cpu.iowait", "%"), ("disk.write", "MB/s"), ("server.rows", "rows/s"))
    ]
    return spans, counters


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


CPU_MS: list[float] = []  # CPU time of this thread for each timed call: robust when other work shares the cores


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    started, cpu_started = time.perf_counter(), time.thread_time()
    value = function()
    CPU_MS.append((time.thread_time() - cpu_started) * 1000)
    return (time.perf_counter() - started) * 1000, value


def describe(name: str, query_ms: list[float], json_ms: list[float]) -> None:
    total = [a + b for a, b in zip(query_ms, json_ms, strict=True)]
    cpu = [a + b for a, b in zip(CPU_MS[-2 * len(query_ms) :: 2], CPU_MS[-2 * len(query_ms) + 1 :: 2], strict=True)]
    print(
        f"{name:<32} query p50 {percentile(query_ms, 50):6.1f} p95 {percentile(query_ms, 95):6.1f} | "
        f"+json p50 {percentile(total, 50):6.1f} p95 {percentile(total, 95):6.1f} | "
        f"cpu +json p50 {percentile(cpu, 50):6.1f} p95 {percentile(cpu, 95):6.1f} ms ({len(query_ms)} queries)"
    )


INGEST_CPU_S: list[float] = []  # process CPU (all threads) spent in the timed ingest sections


def ingest(directory: Path, operations: int, seed: int) -> tuple[int, float, float, float]:
    """Generate a million operations at a time (not timed), then time handing them to the writer in
    producer-sized calls and waiting until they are written (``flush``): the writer's own throughput."""
    duration_s = 150 * operations / 10_000_000
    workload = Workload(seed, operations / LANES / duration_s * 0.9)
    writer = TraceWriter(directory)
    for lane in workload.lanes():
        writer.set_lane(lane)
    written = 0
    step = 200_000  # us of trace per slice
    cursor = T0
    spent = 0.0
    peak_during_ingest = 0.0
    while written < operations:
        batch: list[Operation] = []
        spans: list[Span] = []
        counters: list[CounterSample] = []
        while len(batch) < 1_000_000 and written + len(batch) < operations:
            batch += workload.slice(cursor + step)
            more_spans, more_counters = spans_and_counters(cursor, cursor + step)
            spans += more_spans
            counters += more_counters
            cursor += step
        batch = batch[: operations - written]
        started, cpu_started = time.perf_counter(), time.process_time()
        for first in range(0, len(batch), 20_000):
            writer.add_operations(batch[first : first + 20_000])
        writer.add_spans(spans)
        writer.add_counters(counters)
        writer.flush()
        spent += time.perf_counter() - started
        INGEST_CPU_S.append(time.process_time() - cpu_started)
        peak_during_ingest = max(peak_during_ingest, current_rss_mib())
        written += len(batch)
    close_started = time.perf_counter()
    writer.close()
    close_s = time.perf_counter() - close_started
    return written, spent, close_s, peak_during_ingest


def columnar_ingest(directory: Path, operations: int, seed: int) -> float:
    """The same workload handed over as Arrow tables (add_operation_table): the writer without the
    per-object conversion, as a producer that parses into arrays would use it. Returns ops/s."""
    workload = Workload(seed, operations / LANES / (150 * operations / 10_000_000) * 0.9)
    writer = TraceWriter(directory, compact_on_close=False)
    written, cursor, spent = 0, T0, 0.0
    while written < operations:
        batch: list[Operation] = []
        while len(batch) < 1_000_000 and written + len(batch) < operations:
            batch += workload.slice(cursor + 200_000)
            cursor += 200_000
        batch = batch[: operations - written]
        tables = [
            pa.table({name: [getattr(o, name) for o in batch[i : i + 100_000]] for name in OPERATION_SCHEMA.names})
            for i in range(0, len(batch), 100_000)
        ]
        started = time.perf_counter()
        for table in tables:
            writer.add_operation_table(table)
        writer.flush()
        spent += time.perf_counter() - started
        written += len(batch)
    writer.close()
    return written / spent


def windows(t_min: int, t_max: int, count: int, seed: int) -> Iterator[tuple[int, int]]:
    rng = random.Random(seed)
    for _ in range(count):
        width = int(10 ** rng.uniform(3, 6))  # 1 ms .. 1 s, log-uniform
        start = rng.randint(t_min, max(t_min, t_max - width))
        yield start, start + width


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--operations", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the trace here and keep it")
    parser.add_argument(
        "--columnar-ingest", type=int, default=2_000_000, help="operations for the table path (0: skip)"
    )
    args = parser.parse_args()
    directory = args.keep or Path(tempfile.mkdtemp(prefix="timeline-bench-")) / "trace"
    try:
        print(f"# {args.operations:,} operations over {LANES} lanes, trace in {directory}")
        written, add_s, close_s, ingest_rss = ingest(directory, args.operations, args.seed)
        cpu_us = sum(INGEST_CPU_S) / written * 1e6
        print(f"ingest: {written:,} operations added and written as Parquet parts in {add_s:.1f} s "
              f"= {written / add_s / 1e6:.2f} M ops/s (spans and counters included); "
              f"CPU {cpu_us:.2f} us per operation over all threads")  # fmt: skip
        print(f"close (query files: sorted segments + pyramids): {close_s:.1f} s; "
              f"end to end {written / (add_s + close_s) / 1e6:.2f} M ops/s")  # fmt: skip
        print(f"RSS while ingesting (the generator's current million operations included): {ingest_rss:.0f} MiB; "
              f"peak RSS through close: {peak_rss_mib():.0f} MiB")  # fmt: skip
        size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
        print(f"on disk: {size / 2**20:.0f} MiB ({size / written:.1f} bytes per operation)")
        if args.columnar_ingest:
            rate = columnar_ingest(directory.parent / "columnar", args.columnar_ingest, args.seed)
            print(f"ingest of {args.columnar_ingest:,} operations as Arrow tables (add_operation_table): "
                  f"{rate / 1e6:.2f} M ops/s")  # fmt: skip

        opened_ms, data = timed(lambda: open_trace_data(directory))
        assert data is not None
        t_min, t_max = data.summary.t_min_us or 0, data.summary.t_max_us or 1
        print(f"open trace (cold): {opened_ms:.1f} ms; span {(t_max - t_min) / 1e6:.1f} s")
        everything = Filters()

        def run(t0: int, t1: int, filters: Filters = everything, columns: bool = False) -> tuple[float, float]:
            query_ms, result = timed(
                lambda: read_window(data, t0=t0, t1=t1, width_px=1600, filters=filters, columns=columns)
            )
            json_ms, _ = timed(lambda: to_json(result))
            return query_ms, json_ms

        first = run(t_min, t_max)
        print(f"first zoomed-out window (cold pages): {first[0]:.1f} ms + json {first[1]:.1f} ms")
        out = [run(t_min, t_max) for _ in range(20)]
        describe("zoomed out (whole run, 1600 px)", [a for a, _ in out], [b for _, b in out])
        out = [run(t_min, t_max, columns=True) for _ in range(20)]
        describe("zoomed out, layout=columns", [a for a, _ in out], [b for _, b in out])
        out = [run(t_min, t_max, Filters(kinds=frozenset({"write", "fsync"}))) for _ in range(10)]
        describe("zoomed out, kinds=write,fsync", [a for a, _ in out], [b for _, b in out])
        out = [run(a, b) for a, b in windows(t_min, t_max, args.queries, args.seed)]
        describe("zoomed in (1 ms..1 s windows)", [a for a, _ in out], [b for _, b in out])
        out = [run(a, b, columns=True) for a, b in windows(t_min, t_max, args.queries, args.seed)]
        describe("zoomed in, layout=columns", [a for a, _ in out], [b for _, b in out])
        out = [run(a, a + 10_000_000) for a, _ in windows(t_min, t_max - 10_000_000, 20, args.seed + 1)]
        describe("medium (10 s windows)", [a for a, _ in out], [b for _, b in out])

        stats_ms = [timed(lambda: read_stats(data, t0=t_min, t1=t_max, filters=everything))[0] for _ in range(3)]
        print(f"stats, whole run computed: {statistics.median(stats_ms):.0f} ms (median of 3)")
        whole = directory / WHOLE_STATS_FILE
        stats_ms = [timed(lambda: json.loads(whole.read_text()))[0] for _ in range(3)]
        print(f"stats, whole run as the API answers it (precomputed at close): {statistics.median(stats_ms):.1f} ms")
        stats_ms = []
        for a, b in windows(t_min, t_max, 20, args.seed + 2):
            stats_ms.append(timed(lambda: read_stats(data, t0=a, t1=b, filters=everything))[0])  # noqa: B023
        print(f"stats, 1 ms..1 s windows: p50 {percentile(stats_ms, 50):.1f} ms p95 {percentile(stats_ms, 95):.1f} ms")
        print(f"RSS now {current_rss_mib():.0f} MiB; peak RSS {peak_rss_mib():.0f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(directory.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
